"""Build the Cython extensions.

Flags: -O3 and -ffast-math on the kernel-evaluation code so gcc vectorizes exp() through
glibc's libmvec (the Gram tiles are exp-bound); OpenMP when the compiler accepts it.

Portable by default: no ``-march``, so the binary (and a wheel or sdist built from it) runs on
any x86-64 the interpreter runs on. ``HSSKERN_NATIVE=1`` adds ``-march=native`` for a build that
runs only on CPUs like this one; docs/benchmarks.md measures what that buys.

Run-time dispatch: the modules whose vector loops pay for wider registers (``VARIANTS``: the
exp-bound kernel tiles and the block SMO's passes) are compiled twice more, for
x86-64-v3 (AVX2+FMA) and x86-64-v4 (AVX-512), as ``<module>_v3`` and ``<module>_v4``;
``hsskern.utils._cpu`` imports the best one this CPU runs. The portable build thus costs
nothing on those CPUs, and the base modules still run anywhere. A native build has no variants.

One build: setuptools' editable install compiles in throwaway temporary directories, so every
``pip install -e ".[extra]"`` compiled every module again. Each built module is therefore kept
in ``build/ext-cache/``, keyed by a hash of everything that decides its binary (sources, flags,
compiler, Cython, NumPy, SciPy, Python ABI); a build whose key is cached copies the module
instead of running Cython and the compiler. ``build_ext --force`` (or deleting the folder) rebuilds.
"""
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import Cython
import numpy as np
import scipy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(ROOT, "build", "ext-cache")
KEEP_PER_MODULE = 4  # cached builds kept per module (portable and native, a few edits back)
DIRECTIVES = {"boundscheck": False, "wraparound": False, "cdivision": True,
              "initializedcheck": False}


def _compiler_accepts(flags):
    cc = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "t.c")
        with open(src, "w") as f:
            f.write("#include <math.h>\nint main(void){return (int)exp(0.0) - 1;}\n")
        try:
            res = subprocess.run([cc, *flags, src, "-o", os.path.join(tmp, "t"), "-lm"],
                                 capture_output=True)
        except OSError:
            return False
        return res.returncode == 0


def _flags():
    if sys.platform == "win32":
        return ["/O2", "/openmp"], []
    compile_args = ["-O3"]
    link_args = ["-lm"]  # libm.so pulls in libmvec for the vectorized exp()
    if _compiler_accepts(["-fopenmp"]):
        compile_args.append("-fopenmp")
        link_args.append("-fopenmp")
    if os.environ.get("HSSKERN_NATIVE", "0") == "1":
        if not _compiler_accepts(["-march=native"]):
            sys.exit("HSSKERN_NATIVE=1: the C compiler does not accept -march=native")
        compile_args.append("-march=native")
    return compile_args, link_args


COMPILE, LINK = _flags()
NATIVE = "-march=native" in COMPILE
# fast-math only where it is safe: inputs are validated finite at the public boundary.
FAST = COMPILE + ["-ffast-math"]
# sums rounded term by term as NumPy rounds them (gcc and clang fuse a*b + c by default;
# MSVC does not)
NO_FMA = COMPILE + ([] if sys.platform == "win32" else ["-ffp-contract=off"])

MODULES = {
    "hsskern.kernels._eval": FAST,
    "hsskern.kernels._sparse_eval": FAST,
    "hsskern.cluster._ann": COMPILE,
    "hsskern.hss._ulv": COMPILE,
    # column norms summed as NumPy sums them, so the compression's thresholds on them
    # decide as the NumPy expressions did
    "hsskern.hss._compress_ops": NO_FMA,
    "hsskern.sparse._assemble": FAST,
    "hsskern.sparse._symbolic": COMPILE,
    # unfused, so the wide builds' SMO iterates equal the baseline's bit for bit
    "hsskern.solvers.engines._smo": NO_FMA,
    # fast-math for the vector exp of the kernel rows; the solver uses no infinities
    "hsskern.solvers.engines._cached_smo": FAST,
}

# Modules whose wide-vector builds pay (their exp() tiles run 4 or 8 wide through libmvec
# instead of 2; the block SMO's two passes per step, 8 wide, run 1.2-1.75x faster at v4), and
# the micro-architecture levels built for them. The level names must match
# hsskern/utils/_cpu.py.
VARIANTS = ["hsskern.kernels._eval", "hsskern.kernels._sparse_eval",
            "hsskern.solvers.engines._cached_smo", "hsskern.solvers.engines._smo"]
LEVELS = {"v3": "-march=x86-64-v3", "v4": "-march=x86-64-v4"}
VARIANT_DIR = os.path.join(ROOT, "build", "variants")


def _toolchain():
    """What decides a binary besides its sources and flags."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    try:
        version = subprocess.run(cc.split() + ["--version"], capture_output=True,
                                 text=True).stdout
    except OSError:
        version = ""
    env = [os.environ.get(v, "") for v in ("CC", "CFLAGS", "CPPFLAGS", "LDFLAGS")]
    return [cc, version, *env, sysconfig.get_config_var("EXT_SUFFIX"), sys.platform,
            Cython.__version__, np.__version__, scipy.__version__, repr(sorted(DIRECTIVES.items()))]


def _cache_key(ext, toolchain):
    h = hashlib.sha256()
    for part in toolchain + [ext.name, repr(ext.extra_compile_args),
                             repr(ext.extra_link_args), repr(ext.define_macros)]:
        h.update(part.encode() + b"\0")
    # every .pxd/.pxi of the package: a module may cimport any of them
    headers = sorted(glob.glob(os.path.join(ROOT, "hsskern", "**", "*.px[di]"), recursive=True))
    # a variant's source only includes the real one: its depends name that
    for path in [os.path.join(ROOT, s) for s in ext.sources + ext.depends] + headers:
        h.update(os.path.relpath(path, ROOT).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


class CachedBuildExt(build_ext):
    """build_ext that copies a module from build/ext-cache/ when its key is there."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def build_extensions(self):
        toolchain = _toolchain()
        all_exts, misses = self.extensions, []
        for ext in all_exts:
            key = _cache_key(ext, toolchain)
            suffix = sysconfig.get_config_var("EXT_SUFFIX")
            cached = os.path.join(CACHE, f"{ext.name}-{key}{suffix}")
            if os.path.exists(cached) and not self.force:
                target = self.get_ext_fullpath(ext.name)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                # a fresh mtime: setuptools copies to the package (--inplace, editable) only a
                # module newer than the one there, which may be a native build's
                shutil.copy(cached, target)
                print(f"{ext.name}: unchanged, copied from {os.path.relpath(cached, ROOT)}")
            else:
                misses.append((ext, cached))
        # Cython runs here, on the misses only, one module at a time (it is not thread-safe);
        # the C compiler then runs in parallel.
        self.extensions = [ext for ext, _ in misses]
        if self.extensions:
            # the generated C goes into the extensions setuptools prepared (cythonize returns
            # copies, without setuptools' attributes)
            # include_path: a variant's source (in build/variants) includes the real one
            # and cimports the package's .pxd files from the checkout
            generated = {e.name: e.sources for e in cythonize(
                self.extensions, language_level=3, compiler_directives=DIRECTIVES,
                include_path=[ROOT])}
            for ext in self.extensions:
                ext.sources = generated[ext.name]
            # a miss compiles: setuptools' own check compares timestamps only and would keep
            # (and the cache then store) a module built with other flags, e.g. HSSKERN_NATIVE
            force, self.force = self.force, True
            super().build_extensions()
            self.force = force
        self.extensions = all_exts
        for ext, cached in misses:
            self._store(self.get_ext_fullpath(ext.name), cached)
        self._remove_stale_variants()

    def _remove_stale_variants(self):
        """A variant not built this time (a native build has none) must not stay next to the
        modules: an earlier default build's would be imported instead of the new modules."""
        built = {ext.name for ext in self.extensions}
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        for name in (f"{m}_{level}" for m in VARIANTS for level in LEVELS):
            # the build folder's copy and the package's (--inplace and editable installs)
            for path in {self.get_ext_fullpath(name),
                         os.path.join(ROOT, *name.split(".")) + suffix}:
                if name not in built and os.path.exists(path):
                    os.remove(path)
                    print(f"{os.path.relpath(path, ROOT)}: removed (not built this time)")

    @staticmethod
    def _store(built, cached):
        os.makedirs(CACHE, exist_ok=True)
        tmp = f"{cached}.{os.getpid()}.tmp"  # concurrent builds never see half a file
        shutil.copy2(built, tmp)
        os.replace(tmp, cached)
        module = os.path.basename(cached).rsplit("-", 1)[0]
        entries = sorted(glob.glob(os.path.join(CACHE, f"{module}-*")), key=os.path.getmtime)
        for old in entries[:-KEEP_PER_MODULE]:
            os.remove(old)


def _extension(name, source, args, depends=()):
    return Extension(name, [source], depends=list(depends), include_dirs=[np.get_include()],
                     extra_compile_args=args, extra_link_args=LINK,
                     define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")])


def _variant_source(name, level):
    """A source for ``<name>_<level>``: Cython names a module after its file, so the variant
    is a file of that name that includes the real source (path relative to ROOT, found through
    include_path; the file is rewritten only when it changes, so its timestamp stays)."""
    real = name.replace(".", "/") + ".pyx"
    path = os.path.join(VARIANT_DIR, f"{name.replace('.', '/')}_{level}.pyx")
    text = f'# cython: language_level=3\n# generated by setup.py\ninclude "{real}"\n'
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)
    return os.path.relpath(path, ROOT), real


def _variants():
    if NATIVE or sys.platform == "win32":
        return []
    out = []
    for level, march in LEVELS.items():
        if not _compiler_accepts([march]):
            print(f"setup.py: the C compiler refuses {march}: no {level} variants")
            continue
        for name in VARIANTS:
            source, real = _variant_source(name, level)
            out.append(_extension(f"{name}_{level}", source, MODULES[name] + [march], [real]))
    return out


extensions = [_extension(name, name.replace(".", "/") + ".pyx", args)
              for name, args in MODULES.items()] + _variants()

setup(ext_modules=extensions, cmdclass={"build_ext": CachedBuildExt})
