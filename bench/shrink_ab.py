"""A/B of the decomposition's round-level shrinking: bench/c_grid.py with it on or off.

    python bench/shrink_ab.py on credit_default --standardize --h 3.4 --backends hss \
        --class-weight balanced
    python bench/shrink_ab.py off credit_default ...   (the same arguments)

Results to bench/results/<set>_shrink_{on,off}.json.
"""
import runpy
import sys

import hsskern.solvers.refine as R
mode, rest = sys.argv[1], sys.argv[2:]
if mode == "off":  # nothing is ever far enough past the bias
    R._SHRINK_MARGIN = 1e300
else:  # at any n, not only from _SHRINK_MIN_POINTS on
    R._SHRINK_MIN_POINTS = 0
sys.argv = ["c_grid.py"] + rest + ["--in-process", "--tag", f"shrink_{mode}"]
runpy.run_path("bench/c_grid.py", run_name="__main__")
