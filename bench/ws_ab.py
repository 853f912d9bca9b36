"""A/B of the decomposition's smallest working set (``refine_exact``'s ``max_ws``, the size
of a working set while the free points fit in it), every other choice as on main.

    python bench/ws_ab.py 8000 ijcnn1 --h 1 --backends hss --in-process --tag ws8000
    python bench/ws_ab.py 6000 ijcnn1 --h 1 --backends hss --in-process --tag ws6000

The other arguments are bench/c_grid.py's.
"""
import runpy
import sys

import hsskern.solvers.refine as R

R.refine_exact.__kwdefaults__["max_ws"] = int(sys.argv[1])
sys.argv = ["c_grid.py"] + sys.argv[2:]
runpy.run_path("bench/c_grid.py", run_name="__main__")
