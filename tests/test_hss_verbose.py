"""verbose=1: the compression says which phase it is in, from its first second on."""
import re
import subprocess
import sys
import textwrap
import time

import numpy as np

from hsskern import kernel_operator
from hsskern.hss import compress


def test_verbose_compression_names_every_phase_in_order(capsys):
    X = np.random.default_rng(0).normal(size=(3000, 4))
    H = compress(kernel_operator(X, h=1.0), rel_tol=1e-2, verbose=1, random_state=0)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("[hss")]
    stamps = [float(re.match(r"\[hss\s+([\d.]+) s\]", ln).group(1)) for ln in lines]
    assert stamps == sorted(stamps) and stamps[0] < 1.0
    text = "\n".join(lines)
    order = ["compressing 3000 x 3000", "tree: ", "neighbours: ", "nodes bottom-up",
             "level ", "done: max rank"]
    pos = [text.index(key) for key in order]
    assert pos == sorted(pos)
    # one line per level, deepest first, with the level's ranks as the matrix holds them
    levels = [(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)))
              for m in re.finditer(r"level (\d+): (\d+) nodes, ranks (\d+)-(\d+)", text)]
    assert [lv for lv, *_ in levels] == list(range(H.tree.depth - 1, 0, -1))
    ranks = H.ranks()
    for lv, count, lo, hi in levels:
        on = ranks[H.tree.level == lv]
        assert count == on.size and (lo, hi) == (on.min(), on.max())
    assert f"max rank {H.max_rank}," in text
    # quiet by default
    compress(kernel_operator(X, h=1.0), rel_tol=1e-2, random_state=0)
    assert "[hss" not in capsys.readouterr().err


def test_first_lines_come_within_seconds_on_a_large_problem():
    # n = 2e5: the tree and the neighbour search take seconds before the first node is
    # compressed; the phase lines must not wait for them. Stopped once the search started.
    code = textwrap.dedent("""
        import sys, numpy as np
        from hsskern import kernel_operator
        from hsskern.hss import compress
        K = kernel_operator(np.random.default_rng(0).normal(size=(200000, 8)), h=1.0)
        print("START", flush=True, file=sys.stderr)
        compress(K, rel_tol=1e-3, max_rank=500, verbose=1, random_state=0)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    try:
        seen = {}
        for line in proc.stderr:
            now = time.perf_counter()
            if line.startswith("START"):
                seen["start"] = now
            elif line.startswith("[hss") and "compressing 200000" in line:
                seen["first"] = now
            elif line.startswith("[hss") and "neighbours:" in line:
                seen["search"] = now
                break
    finally:
        proc.kill()
        proc.wait()
    assert seen["first"] - seen["start"] < 1.0
    # the tree of 2e5 points is built and reported before the search starts
    assert seen["search"] - seen["start"] < 15.0
