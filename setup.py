"""Build the Cython extensions.

Flags: -O3 and -ffast-math on the kernel-evaluation code so gcc vectorizes exp() through
glibc's libmvec (the Gram tiles are exp-bound); OpenMP when the compiler accepts it.
``-march=native`` is used by default because hsskern is built from source on the machine that
runs it; set ``HSSKERN_PORTABLE=1`` to build a binary that runs on any x86-64.
"""
import os
import sys
import tempfile
import subprocess

import numpy as np
from setuptools import Extension, setup
from Cython.Build import cythonize


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
    if os.environ.get("HSSKERN_PORTABLE", "0") != "1" and _compiler_accepts(["-march=native"]):
        compile_args.append("-march=native")
    return compile_args, link_args


COMPILE, LINK = _flags()
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
    "hsskern.solvers._smo": COMPILE,
    # fast-math for the vector exp of the kernel rows; the solver uses no infinities
    "hsskern.solvers._cached_smo": FAST,
}

extensions = [
    Extension(
        name,
        [name.replace(".", "/") + ".pyx"],
        include_dirs=[np.get_include()],
        extra_compile_args=args,
        extra_link_args=LINK,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for name, args in MODULES.items()
]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
)
