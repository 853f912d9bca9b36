"""A/B of the decomposition route's choices on the small-problem start: K stored at any number
of features, or never (the matrix-free default below STORE_MIN_FEATURES features).

    python bench/store_ab.py store magic04 --standardize --h 1 --backends hss --in-process \
        --tag force_store
    python bench/store_ab.py plain magic04 ... [--max-chunk 6000] --tag force_plain

The other arguments are bench/c_grid.py's (``--max-chunk`` sets the working-set cap).
"""
import runpy
import sys

import hsskern.solvers.hss_path as H
if sys.argv[1] == "store":
    H.STORE_MIN_FEATURES = 0
sys.argv = ["c_grid.py"] + sys.argv[2:]
runpy.run_path("bench/c_grid.py", run_name="__main__")
