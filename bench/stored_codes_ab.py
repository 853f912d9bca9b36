"""A/B of the stored kernel's one-byte distance codes: bench/c_grid.py with them or with K
stored in float64 (no set of points qualifies for codes).

    python bench/stored_codes_ab.py float64 a9a --h 1 --backends hss --in-process \
        --max-chunk 6000 --tag f64_mc6000
    python bench/stored_codes_ab.py codes a9a ...   (the same arguments)
"""
import runpy
import sys

import hsskern.kernels.operator as O
mode, rest = sys.argv[1], sys.argv[2:]
if mode == "float64":
    O._CODE_MAX = -1
sys.argv = ["c_grid.py"] + rest
runpy.run_path("bench/c_grid.py", run_name="__main__")
