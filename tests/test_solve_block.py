"""The decomposition's working-set block reused across rounds and C values
(hsskern.solvers.engines.exact: ``block_reuse``), and its phase timings and kernel-entry counts."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.datasets import make_classification
from sklearn.svm import SVC

from hsskern import kernel_operator
from hsskern.solvers.engines.admm import kkt_violation
from hsskern.solvers.paths.hss_path import hss_svm_path, prepare_hss
from hsskern.kernels import make_kernel
from hsskern.solvers.engines.decomposition import _working_block
from hsskern.solvers.engines.exact import LocalProducts, solve_block
from hsskern.options import DecompositionOptions, HSSSVCOptions
from svm_reference import gap_tol


def _problem(seed, n=240, d=4):
    X, y = make_classification(n, d, n_informative=3, n_redundant=0, random_state=seed,
                               class_sep=0.8, flip_y=0.05)
    return X, np.where(y == 1, 1.0, -1.0)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), cap=st.integers(8, 60), steps=st.integers(2, 12))
def test_reused_block_equals_the_kernel_of_every_working_set(seed, cap, steps):
    # random sequences of working sets that shrink, grow, keep almost all or almost none of
    # the last one's points: the block always holds K[W, W] for W's (reordered) points
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(80, 3))
    K = kernel_operator(X, "gaussian", h=1.0)
    Kd = K.to_dense()
    ws, prev = {}, None
    for _ in range(steps):
        q = int(rng.integers(2, cap + 1))
        if prev is not None and rng.random() < 0.6:  # mostly the last set, a few swapped
            keep = rng.choice(prev, min(q, prev.size), replace=False)
            pool = np.setdiff1d(np.arange(80), keep)
            extra = rng.choice(pool, q - keep.size, replace=False)
            swap = int(rng.integers(0, 3))
            W = np.unique(np.concatenate([keep[swap:], extra, rng.choice(pool, swap)]))
        else:
            W = np.sort(rng.choice(80, q, replace=False))
        KWrows, Wb, evaluated, reused = _working_block(K, W, ws, cap)
        assert KWrows.flags.c_contiguous and KWrows.shape[0] == W.size
        assert KWrows.shape[1] >= W.size and KWrows.shape[1] <= max(cap, W.size)
        np.testing.assert_array_equal(np.sort(Wb), W)  # the same points, in slot order
        np.testing.assert_allclose(KWrows[:, :W.size], Kd[np.ix_(Wb, Wb)], rtol=0,
                                   atol=1e-14)
        # exactly symmetric, as SMO's pair steps read row i for column i and vice versa
        np.testing.assert_array_equal(KWrows[:, :W.size], KWrows[:, :W.size].T)
        # every entry was either evaluated now (a symmetric pair counted once) or reused
        assert reused + 2 * evaluated - W.size >= W.size ** 2 - W.size
        assert evaluated <= W.size * (W.size + 1) // 2
        prev = W


def test_a_block_of_other_points_is_not_reused():
    X, y = _problem(1)
    K1 = kernel_operator(X, "gaussian", h=1.0)
    K2 = kernel_operator(X + 0.5, "gaussian", h=1.0)
    ws = {}
    W = np.arange(40)
    _working_block(K1, W, ws, 64)
    KWrows, Wb, evaluated, reused = _working_block(K2, W, ws, 64)
    assert reused == 0 and evaluated == 40 * 41 // 2
    np.testing.assert_allclose(KWrows[:, :40], K2.to_dense()[np.ix_(Wb, Wb)], atol=1e-14)


def test_a_kept_block_does_not_keep_its_points_alive():
    # a worker's buffer outlives the pair it was filled for: the next pair's preparation
    # must not find the last pair's points still held (75 MB a pair on fashion_mnist)
    import gc
    import weakref
    X, _ = _problem(2)
    K = kernel_operator(X + 0.0, "gaussian", h=1.0)
    ws = {}
    _working_block(K, np.arange(40), ws, 64)
    points = weakref.ref(K.points)
    del K
    gc.collect()
    assert points() is None and ws["block"] is not None


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, 2.5), max_ws=st.sampled_from([4, 12, 40]))
def test_decomposition_with_a_few_row_block_reaches_svc(seed, logC, max_ws):
    # the block limited to a few rows (working sets of 4-40 points, reused across rounds):
    # the optimum over all n points in float64, SVC's decision values to LIBSVM's tolerance,
    # and the same optimum as fresh blocks every round
    X, y = _problem(seed)
    C = 10.0 ** logC
    K = kernel_operator(X, "gaussian", h=1.0)
    options = DecompositionOptions(max_ws=max_ws, max_chunk=max_ws, max_rounds=100_000)
    r = solve_block(K, y, C, options=options)
    fresh = solve_block(K, y, C, options=options.replace(block_reuse=False))
    assert r.converged and max(r.ws_sizes) <= max_ws
    Kd = K.to_dense()
    KYa = Kd @ (y * r.alpha)  # recomputed here in float64 over all n points
    assert kkt_violation(KYa[:, None], y[:, None], r.alpha[:, None], C)[0] <= 1e-3 * (1 + 1e-6)
    np.testing.assert_allclose(r.decision, KYa + r.bias, atol=1e-8 * max(1.0, C))
    ref = SVC(C=C, gamma=0.5, tol=1e-6).fit(X, y)
    np.testing.assert_allclose(r.decision, ref.decision_function(X),
                               atol=5e-2 * max(1.0, C ** 0.5))
    np.testing.assert_allclose(r.decision, fresh.decision, atol=5e-2 * max(1.0, C ** 0.5))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n_distinct=st.integers(2, 40), logC=st.floats(-1.0, 2.0))
def test_products_over_repeated_rows_are_evaluated_once_per_distinct_point(seed, n_distinct,
                                                                          logC):
    # rows drawn with repetition from a few distinct points, some copies with the other label
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(n_distinct, 3))
    X = P[rng.integers(0, n_distinct, 150)]
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=150) > 0, 1.0, -1.0)
    y[:2] = 1.0, -1.0
    K = kernel_operator(X, "gaussian", h=1.0)
    Kd = K.to_dense()
    u = np.unique(X, axis=0).shape[0]
    eng = LocalProducts(X, K.kernel)
    cols = rng.choice(150, 30, replace=False)
    c = rng.normal(size=30)
    skip = rng.random(150) < 0.4
    for sk in (None, skip):
        f = np.ones(150)
        entries = eng.add(f, cols, c, sk)
        keep = np.ones(150, bool) if sk is None else ~sk
        ref = 1.0 + np.where(keep, Kd[:, cols] @ c, 0.0)
        np.testing.assert_allclose(f, ref, rtol=1e-12, atol=1e-12 * np.abs(c).sum())
        # each distinct point's entries once: at most u distinct rows x distinct columns
        assert entries <= u * np.unique(X[cols], axis=0).shape[0]
    # the decomposition on such data is still SVC's solution over all 150 rows
    C = 10.0 ** logC
    r = solve_block(K, y, C,
                     options=DecompositionOptions(max_ws=16, max_chunk=16, max_rounds=100_000))
    assert r.converged
    KYa = Kd @ (y * r.alpha)
    assert kkt_violation(KYa[:, None], y[:, None], r.alpha[:, None], C)[0] <= 1e-3 * (1 + 1e-6)
    np.testing.assert_allclose(r.decision, KYa + r.bias, atol=1e-8 * max(1.0, C))
    ref = SVC(C=C, gamma=0.5, tol=1e-6).fit(X, y)
    np.testing.assert_allclose(r.decision, ref.decision_function(X),
                               atol=5e-2 * max(1.0, C ** 0.5))


def test_path_reuses_blocks_and_reports_what_it_computed():
    # along a C path the rounds of each C find most of their block in the last round's; the
    # solution is SVC's either way, with fewer kernel entries evaluated
    X, y = _problem(3, n=400)
    Y = y[:, None]
    Cs = [0.1, 1.0, 10.0, 100.0]
    problem = prepare_hss(X, make_kernel("gaussian", h=1.0), approximation="exact")
    on, off = (hss_svm_path(problem, Y, Cs, options=HSSSVCOptions(
        max_chunk=100, solve_exact=True, decomposition=DecompositionOptions(block_reuse=reuse)))
        for reuse in (True, False))
    total = {True: 0, False: 0}
    for s_on, s_off in zip(on, off):
        r_on, r_off = s_on.info["exact"][0], s_off.info["exact"][0]
        assert r_on.converged and r_off.converged
        ref = SVC(C=s_on.C, gamma=0.5, tol=1e-6).fit(X, y).decision_function(X)
        for r in (r_on, r_off):
            np.testing.assert_allclose(r.decision, ref, atol=5e-2 * max(1.0, s_on.C ** 0.5))
            assert set(r.timings) == {"start", "select", "block", "smo", "newton", "update",
                                      "sync"}
            assert all(t >= 0 for t in r.timings.values())
            assert sum(r.timings.values()) <= r.time * (1 + 1e-9) + 1e-6
        assert r_off.kernel_entries["block_reused"] == 0
        total[True] += r_on.kernel_entries["block"]
        total[False] += r_off.kernel_entries["block"]
    assert sum(s.info["exact"][0].kernel_entries["block_reused"] for s in on) > 0
    assert total[True] < total[False]


@pytest.mark.parametrize("headroom", [1.0, 1.25, 4.0])
def test_the_block_buffer_rows_are_headroom_times_the_working_set(headroom):
    # the buffer's row stride follows |W| (not max_chunk: strided rows would page in the
    # span between them); any headroom solves the same SVM, regrowths included
    from hsskern.solvers.engines.decomposition import DecompositionOptions
    X, y = _problem(8, n=300)
    K = kernel_operator(X, "gaussian", h=1.0)
    ws = {}
    opts = DecompositionOptions(block_headroom=headroom, shrinking=False)
    r = solve_block(K, y, 10.0, workspace=ws, options=opts.replace(max_ws=20, max_chunk=300))
    assert r.converged and max(r.ws_sizes) > 20  # the free set grew W past max_ws
    assert ws["stride"] <= int(np.ceil(headroom * max(r.ws_sizes)))
    assert ws["block"].size == ws["stride"] ** 2
    ref = SVC(C=10.0, gamma=0.5, tol=1e-6).fit(X, y).decision_function(X)
    np.testing.assert_allclose(r.decision, ref, atol=gap_tol(1e-3, 10.0, np.ones(300)))


def test_a_call_never_starts_from_an_earlier_calls_block():
    # the same problem solved after another one on a shared workspace gives bit for bit what
    # it gives on a fresh workspace (one-vs-rest classes are independent of each other)
    X, y = _problem(5, n=300)
    K = kernel_operator(X, "gaussian", h=1.0)
    ws = {}
    solve_block(K, -y[::-1].copy(), 3.0, workspace=ws,
                 options=DecompositionOptions(max_ws=40, max_chunk=40))
    after = solve_block(K, y, 3.0, workspace=ws,
                         options=DecompositionOptions(max_ws=40, max_chunk=40))
    alone = solve_block(K, y, 3.0, workspace={},
                         options=DecompositionOptions(max_ws=40, max_chunk=40))
    np.testing.assert_array_equal(after.alpha, alone.alpha)
    np.testing.assert_array_equal(after.kernel_entries["block"], alone.kernel_entries["block"])


@pytest.mark.parametrize("reuse", [True, False])
def test_kernel_entry_counts_match_the_rounds(reuse):
    # fresh blocks: |W|(|W|+1)/2 per round; the start from zero evaluates nothing, from a
    # given alpha n x n_SV
    X, y = _problem(4)
    K = kernel_operator(X, "gaussian", h=1.0)
    # without shrinking: its syncs change which points the working sets are drawn from
    r = solve_block(K, y, 1.0, options=DecompositionOptions(max_ws=30, max_chunk=30,
                                                             block_reuse=reuse, shrinking=False))
    fresh = sum(q * (q + 1) // 2 for q in r.ws_sizes)
    if reuse:
        assert r.kernel_entries["block"] < fresh
    else:
        assert r.kernel_entries["block"] == fresh
    assert r.kernel_entries["start"] == 0
    s = solve_block(K, y, 2.0, 2 * r.alpha,
                     options=DecompositionOptions(max_ws=30, max_chunk=30, block_reuse=reuse))
    assert s.kernel_entries["start"] == len(y) * np.count_nonzero(r.alpha)


def test_the_default_working_set_is_smaller_below_the_shrinking_size():
    # below shrink_min_points points an evaluated kernel's rounds default to the small working
    # set (set to 40 for this n), from there on to 8,000; the same optimum either way
    from hsskern.solvers.engines.decomposition import DecompositionOptions
    options = DecompositionOptions(small_max_ws=40)
    X, y = _problem(7)
    K = kernel_operator(X, "gaussian", h=1.0)
    Kd = K.to_dense()
    small = solve_block(K, y, 1.0, tol=1e-8, options=options.replace(max_rounds=100_000))
    wide = solve_block(K, y, 1.0, tol=1e-8,
                        options=options.replace(max_rounds=100_000, max_ws=8000))
    assert small.converged and wide.converged
    assert small.ws_sizes[0] <= 40 < wide.ws_sizes[0]
    np.testing.assert_allclose(Kd @ small.dual_coef, Kd @ wide.dual_coef,
                               atol=gap_tol(1e-8, 1.0, np.ones(len(y))))
    # a stored kernel keeps its own working sets (its cap, not the small default)
    assert solve_block(K.stored(), y, 1.0, options=options.replace(max_rounds=1)).ws_sizes[0] > 40
    options = DecompositionOptions(small_max_ws=40, shrink_min_points=len(y))
    assert solve_block(K, y, 1.0, options=options.replace(max_rounds=1)).ws_sizes[0] > 40


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-0.5, 2.0),
       per_change=st.sampled_from([0.0, 1.0, 4.0, 16.0]))
def test_working_sets_cut_to_the_last_changes_reach_svc(seed, logC, per_change):
    # sets cut to a multiple of the last round's changes (ws_per_change, down to ws_floor)
    # reach LIBSVM's stopping test on all points and SVC's SVM, as full-size sets do
    from hsskern.solvers.engines.decomposition import DecompositionOptions
    X, y = _problem(seed, n=400)
    C = 10.0 ** logC
    K = kernel_operator(X, "gaussian", h=1.0)
    opts = DecompositionOptions(ws_per_change=per_change, ws_floor=4, shrinking=False)
    r = solve_block(K, y, C, options=opts.replace(max_ws=120, max_chunk=400))
    assert r.converged
    if per_change == 1.0:  # a round changes fewer points than its set holds: cut
        assert min(r.ws_sizes[1:]) < 120
    f = K.to_dense() @ (y * r.alpha)
    assert kkt_violation(f[:, None], y[:, None], r.alpha[:, None], C)[0] < 1e-3 * (1 + 1e-6)
    ref = SVC(C=C, gamma=0.5, tol=1e-6).fit(X, y).decision_function(X)
    np.testing.assert_allclose(r.decision, ref, atol=gap_tol(1e-3, C, np.ones(400)))


def test_the_options_refuse_a_negative_change_multiple_and_a_floor_below_two():
    from hsskern.solvers.engines.decomposition import DecompositionOptions
    with pytest.raises(ValueError, match="ws_per_change"):
        DecompositionOptions(ws_per_change=-1.0)
    with pytest.raises(ValueError, match="ws_floor"):
        DecompositionOptions(ws_floor=1)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), q=st.integers(1, 40), extra=st.integers(1, 30),
       headroom=st.integers(0, 10))
def test_moving_slots_in_place_is_numpys_gather_and_scatter(seed, q, extra, headroom):
    """move_slots(B, q, width, dst, src) leaves B[:q, :q] as NumPy's B[dst] = B[src] then
    B[:q, dst] = B[:q, src] would, with no temporary; bad positions are refused."""
    from hsskern.solvers.engines._smo import move_slots
    rng = np.random.default_rng(seed)
    width = q + extra  # the last block's points: q kept places and ``extra`` past them
    S = width + headroom
    B = rng.normal(size=(S, S))
    m = min(q, extra)
    dst = np.sort(rng.choice(q, m, replace=False)).astype(np.intp)
    src = (q + rng.choice(extra, m, replace=False)).astype(np.intp)
    ref = B.copy()
    ref[dst] = ref[src]
    ref[:q, dst] = ref[:q, src]
    move_slots(B, q, width, dst, src)
    np.testing.assert_array_equal(B[:q, :q], ref[:q, :q])
    with pytest.raises(ValueError, match="below q"):
        move_slots(B, q, width, src, dst)


def test_a_rounds_update_takes_the_working_sets_rows_from_its_block():
    # the decision values after a round are the dense kernel's K[:, W] (y dalpha) whether the
    # rows in W come from the block or are evaluated (a stored kernel's products read all)
    X, y = _problem(7)
    K = kernel_operator(X, "gaussian", h=1.0)
    r = solve_block(K, y, 1.0,
                     options=DecompositionOptions(max_ws=40, max_chunk=40, shrinking=False))
    np.testing.assert_allclose(r.decision - r.bias, K.to_dense() @ (y * r.alpha),
                               rtol=1e-10, atol=1e-10)
