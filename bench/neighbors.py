"""k-nearest-neighbour search for HSS-ANN: ours (random projection forest) vs exact peers.

    python bench/neighbors.py [--k 64] [--repeat 3] [--queries 1000]

Data: gmm8 (d = 8) at n = 10^4, 5·10^4, 10^5 from ../shared/tools/gen_gmm.py, and the
training sets of ijcnn1 (d = 22), a9a (d = 123), w8a (d = 300) from ../shared/datasets.
For each: wall time (median of ``--repeat``) and peak extra RSS of ``knn(method="rptree")``
with the defaults (5 trees + 1 neighbour-of-neighbour round), of the trees alone
(``refine=0``) and of 10 trees alone, at 2 threads and (defaults only) 1 thread (wall and CPU
seconds); gmm8 at n = 10^6 runs the defaults once, for scaling and peak memory; recall@k of
each against the exact k-th distance on ``--queries`` random query points (a tie-proof recall:
a returned neighbour counts if it is no farther than the true k-th neighbour).
Peers, same process, 2 threads: ``scipy.spatial.cKDTree(X).query(X, k + 1, workers=-1)`` and
scikit-learn ``NearestNeighbors(algorithm="auto", n_jobs=-1)``; their full-set times are
extrapolated (build + n/q x time for q = 2000 queries) except where n <= 10^4, where the full
query is also timed to check the extrapolation. The machine is shared (load average recorded):
compare ratios within one run, not absolute times across runs.

``--part crossover`` (also part of the default ``all``) measures what ``method="auto"`` rests
on: one-thread CPU seconds of exact (cKDTree) vs rptree, and rptree's full recall@k, on
standard normal points at d = 2..5 (n = 50,000; 20,000 at d = 5), the first 50,000 rows of
skin_nonskin (d = 3) and gmm8 at n = 2000, 5000, 10,000. It is stored under "crossover".
"""
import argparse
import os
import sys
import time

import numpy as np
from scipy.spatial import cKDTree
from sklearn.neighbors import NearestNeighbors
from threadpoolctl import threadpool_limits

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared", "tools"))
from _common import load_shared, measure, write_result  # noqa: E402

from hsskern.cluster.neighbors import choose_method, knn  # noqa: E402


def datasets():
    try:
        from gen_gmm import gmm8
    except ImportError:
        gmm8 = None
    if gmm8 is not None:
        for n in (10_000, 50_000, 100_000, 1_000_000):
            yield f"gmm8_{n}", np.ascontiguousarray(gmm8(n)[0])
    for name in ("ijcnn1", "a9a", "w8a"):
        data = load_shared(name)
        if data is not None:
            yield name, np.ascontiguousarray(data[0], dtype=np.float64)


def exact_kth(X, queries, k):
    """Exact k-th neighbour distance (self excluded) of the query rows, by blocked brute force."""
    sq = np.einsum("ij,ij->i", X, X)
    out = np.empty(len(queries))
    block = max(1, min(200, 20_000_000 // len(X)))  # at most ~160 MB of distances at once
    for a in range(0, len(queries), block):
        q = queries[a:a + block]
        D2 = sq[q][:, None] + sq[None, :] - 2.0 * (X[q] @ X.T)
        D2[np.arange(len(q)), q] = np.inf
        # exact distances for the candidates near the threshold (the expansion above loses
        # small distances): take 2k by the fast route, recompute those directly
        cand = np.argpartition(D2, 2 * k, axis=1)[:, :2 * k + 1]
        d = np.sqrt(((X[q][:, None, :] - X[cand]) ** 2).sum(-1))
        d[cand == q[:, None]] = np.inf
        out[a:a + block] = np.sort(d, axis=1)[:, k - 1]
    return out


def recall(dist_rows, kth):
    return float(np.mean(dist_rows <= kth[:, None] * (1 + 1e-12)))


def peer_time(fit, query, X, n_q, rng):
    """(seconds for the full set, extrapolated from n_q queries, and whether extrapolated)."""
    q = rng.choice(len(X), min(n_q, len(X)), replace=False)
    t0 = time.perf_counter()
    model = fit(X)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    query(model, X[q])
    t_q = time.perf_counter() - t0
    return t_fit + t_q * len(X) / len(q)


def crossover(k):
    """One-thread CPU seconds of exact vs rptree where the auto rule switches."""
    try:
        from gen_gmm import gmm8
    except ImportError:
        gmm8 = None
    cases = [(f"normal d={d}", np.random.default_rng(d).standard_normal((n, d)))
             for d, n in ((2, 50_000), (3, 50_000), (4, 50_000), (5, 20_000))]
    skin = load_shared("skin_nonskin")
    if skin is not None:
        cases.append(("skin_nonskin[:50000]", np.ascontiguousarray(skin[0][:50_000])))
    if gmm8 is not None:
        cases += [(f"gmm8_{n}", np.ascontiguousarray(gmm8(n)[0])) for n in (2000, 5000, 10_000)]
    out = []
    with threadpool_limits(1):
        for name, X in cases:
            c0 = time.process_time()
            _, de = knn(X, k, method="exact")
            c1 = time.process_time()
            _, da = knn(X, k, method="rptree", random_state=0)
            c2 = time.process_time()
            row = {"data": name, "n": X.shape[0], "d": X.shape[1], "k": k,
                   "exact_cpu_seconds": c1 - c0, "rptree_cpu_seconds": c2 - c1,
                   "rptree_recall": recall(da, de[:, -1]),
                   "auto_method": choose_method(X.shape[0], X.shape[1], k)}
            print(row, flush=True)
            out.append(row)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--part", choices=("all", "datasets", "crossover"), default="all")
    args = ap.parse_args()
    k = args.k
    if args.part == "crossover":
        # refresh only the crossover table, keeping the dataset rows of the last full run
        import json
        from _common import RESULTS
        old = RESULTS / "neighbors.json"
        payload = json.loads(old.read_text()) if old.exists() else {"rows": []}
        payload["crossover"] = crossover(k)
        for key in ("benchmark", "date", "machine"):
            payload.pop(key, None)
        print("wrote", write_result("neighbors", payload))
        return
    rows = []
    for name, X in datasets():
        n, d = X.shape
        rng = np.random.default_rng(0)
        queries = rng.choice(n, args.queries, replace=False)
        kth = exact_kth(X, queries, k)
        row = {"data": name, "n": n, "d": d, "k": k, "auto_method": choose_method(n, d, k),
               "load_average": os.getloadavg()[0], "ours": {}, "peers": {}}
        configs = {"rptree (5 trees + 1 refine)": {},
                   "rptree trees only (5)": {"refine": 0},
                   "rptree trees only (10)": {"refine": 0, "n_iter": 10}}
        big = n > 200_000
        if big:  # the 10^6 row shows scaling and memory: defaults only, one run
            configs = {"rptree (5 trees + 1 refine)": {}}
        for label, cfg in configs.items():
            t, mem, (idx, dist) = measure(
                lambda: knn(X, k, method="rptree", random_state=0, **cfg),
                1 if big else args.repeat)
            row["ours"][label] = {"seconds_2threads": t, "peak_extra_MB": mem / 2**20,
                                  "recall": recall(dist[queries], kth)}
            print(name, label, row["ours"][label], flush=True)
            del idx, dist
        if not big:
            # CPU seconds of a one-thread run: the best proxy for an unloaded machine's wall
            # time when other jobs share the cores
            with threadpool_limits(1):
                c0 = time.process_time()
                t, _, _ = measure(lambda: knn(X, k, method="rptree", random_state=0), 1)
                c1 = time.process_time()
            row["ours"]["rptree (5 trees + 1 refine)"]["seconds_1thread"] = t
            row["ours"]["rptree (5 trees + 1 refine)"]["cpu_seconds_1thread"] = c1 - c0
        row["peers"]["cKDTree (exact, extrapolated)"] = peer_time(
            cKDTree, lambda m, Q: m.query(Q, k + 1, workers=-1), X, 2000, rng)
        row["peers"]["sklearn NearestNeighbors auto (exact, extrapolated)"] = peer_time(
            lambda A: NearestNeighbors(n_neighbors=k + 1, n_jobs=-1).fit(A),
            lambda m, Q: m.kneighbors(Q), X, 2000, rng)
        if n <= 10_000:
            t, mem, (idx, dist) = measure(lambda: knn(X, k, method="exact"), 1)
            row["peers"]["cKDTree (exact, full run via knn)"] = t
        ours = row["ours"]["rptree (5 trees + 1 refine)"]["seconds_2threads"]
        row["speedup_vs_cKDTree"] = row["peers"]["cKDTree (exact, extrapolated)"] / ours
        print(name, row["peers"], flush=True)
        rows.append(row)
    payload = {"description": __doc__.strip().splitlines()[0],
               "command": "python bench/neighbors.py", "rows": rows}
    if args.part == "all":
        payload["crossover"] = crossover(k)
    path = write_result("neighbors", payload)
    print("wrote", path)


if __name__ == "__main__":
    main()
