"""hsskern.hss.estimate_memory against the measured peak of HSSSVC fits on gmm8.

    python bench/hss_memory.py [--sizes 10000 30000 100000] [--max-rank 500] [--stage fit]
    python bench/hss_memory.py --sizes 1000000 --max-rank 200 --stage factor

Each size runs in a fresh process: gmm8(n) from ../shared/tools/gen_gmm.py (d = 8), the peak
reset (/proc/self/clear_refs) after the data are made, then ``--stage fit``: a default
``HSSSVC(rel_tol=1e-3, abs_tol=1e-5, max_rank, leaf_size=128, n_neighbors=64)`` fit (h = 1,
refine="auto"), compared with the estimate's ``peak``; or ``--stage factor``: compression and
one ULV factor only, compared with its ``factorization`` phase. "extra" is VmHWM minus the
resident size before the fit (the estimate counts neither the interpreter nor X). Results go
to bench/results/hss_memory.json.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import write_result  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(os.path.dirname(ROOT), "shared", "tools")

CHILD = r"""
import json, sys, time
sys.path.insert(0, {tools!r})
from gen_gmm import gmm8
from hsskern import HSSSVC, kernel_operator
from hsskern.hss import HSSOptions, compress, estimate_memory

def status(key):
    with open("/proc/self/status") as f:
        return [int(l.split()[1]) * 1024 for l in f if l.startswith(key + ":")][0]

n, R, stage = {n}, {R}, {stage!r}
X, y = gmm8(n)[:2]
base = status("VmRSS")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
t0 = time.perf_counter()
out = {{"n": n, "max_rank": R, "stage": stage}}
e = estimate_memory(n, 8, max_rank=R)
if stage == "fit":
    m = HSSSVC(rel_tol=1e-3, abs_tol=1e-5, max_rank=R, leaf_size=128, n_neighbors=64,
               random_state=0).fit(X, y)
    out.update(hss=m.hss_["memory_bytes"], factor=m.hss_["factor_memory_bytes"],
               estimate=e["peak"], estimate_phase=e["peak_phase"])
else:
    H = compress(kernel_operator(X, h=1.0), HSSOptions(rel_tol=1e-3, abs_tol=1e-5,
                                                       max_rank=R, random_state=0))
    F = H.factor(100.0)
    out.update(hss=H.memory_bytes(), factor=F.memory_bytes(),
               estimate=e["phases"]["factorization"], estimate_phase="factorization")
out.update(seconds=time.perf_counter() - t0, base_rss=base, peak_rss=status("VmHWM"),
           extra=status("VmHWM") - base, estimate_hss=e["hss"], estimate_factor=e["factor"])
out["ratio"] = out["estimate"] / out["extra"]
print(json.dumps(out))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 30000, 100000])
    ap.add_argument("--max-rank", type=int, default=500)
    ap.add_argument("--stage", choices=("fit", "factor"), default="fit")
    ap.add_argument("--out", default="hss_memory")
    args = ap.parse_args()
    rows = []
    env = dict(os.environ, PYTHONPATH=ROOT)
    for n in args.sizes:
        code = CHILD.format(tools=TOOLS, n=n, R=args.max_rank, stage=args.stage)
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env)
        if res.returncode:
            print(f"n={n}: failed\n{res.stderr[-2000:]}", file=sys.stderr)
            continue
        row = json.loads(res.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"n={n:>8} {args.stage}: estimate {row['estimate'] / 2**30:6.2f} GiB "
              f"({row['estimate_phase']}), measured extra {row['extra'] / 2**30:6.2f} GiB "
              f"(peak RSS {row['peak_rss'] / 2**30:.2f}), ratio {row['ratio']:.2f}", flush=True)
        write_result(args.out, {"rows": rows})


if __name__ == "__main__":
    main()
