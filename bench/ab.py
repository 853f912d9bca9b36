"""A/B of one choice of the decomposition route: bench/c_grid.py with that choice changed,
everything else as on main (the first argument names it; the rest are c_grid.py's).

    python bench/ab.py store magic04 --standardize --h 1 --backends hss --in-process --tag force_store
    python bench/ab.py float64 a9a --h 1 --backends hss --in-process --tag stored_float64
    python bench/ab.py max_ws=4000 ijcnn1 --h 1 --backends hss --in-process --tag ws4000

* ``store``: K stored at any number of features (``hss_path.STORE_MIN_FEATURES = 0``);
* ``float64``: a stored K in float64, never as one-byte distance codes;
* ``max_ws=N``: ``refine_exact``'s working set while the free points fit in it;
* ``plain`` / ``codes``: main's choice, named for the other side of an A/B.
"""
import runpy
import sys

import hsskern.kernels.operator as O
import hsskern.solvers.hss_path as H
import hsskern.solvers.refine as R

choice = sys.argv[1]
if choice == "store":
    H.STORE_MIN_FEATURES = 0
elif choice == "float64":
    O._CODE_MAX = -1  # no set of points qualifies for codes
elif choice.startswith("max_ws="):
    R.refine_exact.__kwdefaults__["max_ws"] = int(choice.split("=")[1])
elif choice not in ("plain", "codes"):
    sys.exit(f"unknown choice {choice!r}: store, float64, max_ws=N, plain or codes")
sys.argv = ["c_grid.py"] + sys.argv[2:]
runpy.run_path("bench/c_grid.py", run_name="__main__")
