"""The decomposition's object form (hsskern.solvers.engines.decomposition): its options, and the
one-call ``solve_block`` as a wrapper of it."""
import dataclasses

import numpy as np
import pytest
from sklearn.datasets import make_classification

from hsskern.kernels import kernel_operator
from hsskern.solvers.engines.decomposition import Decomposition, DecompositionOptions
from hsskern.solvers.engines.exact import solve_block
from hsskern.solvers.engines.interface import BlockEngine, DualProblem


def _problem(seed, n=200, d=4):
    X, y = make_classification(n, d, n_informative=3, n_redundant=0, random_state=seed,
                               class_sep=0.8, flip_y=0.05)
    return kernel_operator(X, "gaussian", h=1.0), np.where(y == 1, 1.0, -1.0)


@pytest.mark.parametrize("field, value", [
    ("max_chunk", 0), ("max_ws", 0), ("max_rounds", -1), ("sub_tol", -0.1),
    ("newton_ridge", float("nan")), ("newton_free_fraction", 1.5), ("newton", "yes"),
    ("shrinking", "sometimes"), ("sync_rounds", 0), ("small_max_ws", 2.5),
    ("max_smo_iter", True)])
def test_options_refuse_values_outside_their_range_by_name(field, value):
    with pytest.raises(ValueError, match=f"DecompositionOptions: {field} must be"):
        DecompositionOptions(**{field: value})


def test_options_are_frozen_and_have_the_documented_defaults():
    o = DecompositionOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.newton = False
    # the defaults the class documents (and solve_block's keywords had before they moved)
    documented = dict(max_ws=None, max_chunk=16000, max_rounds=None, sub_tol=0.1,
                      max_smo_iter=None, newton=True, block_reuse=True, shrinking="auto")
    for name, value in documented.items():
        assert getattr(o, name) == value
        assert f"{name} : " in DecompositionOptions.__doc__


@pytest.mark.parametrize("seed, C, weighted", [(0, 1.0, False), (1, 30.0, True)])
def test_refine_exact_is_the_object_solve_bit_for_bit(seed, C, weighted):
    K, y = _problem(seed)
    w = np.random.default_rng(seed).uniform(0.5, 2.0, y.size) if weighted else None
    # Newton on every working set with two free points; SMO's budget before it is one step
    # (smo_before_newton=0: no measured time steers the run, so it is deterministic)
    opts = DecompositionOptions(max_ws=40, max_chunk=60, max_rounds=10_000,
                                newton_min_free=2, newton_free_fraction=0.0,
                                smo_before_newton=0.0)
    a = solve_block(K, y, C, weights=w, tol=1e-6, options=opts)
    b = Decomposition(K, y, C, weights=w, options=opts).solve(tol=1e-6)
    assert a.converged and b.converged and a.newton_steps > 0
    assert a.rounds == b.rounds and a.smo_iters == b.smo_iters
    assert np.array_equal(a.alpha, b.alpha) and np.array_equal(a.decision, b.decision)
    # the same problem through the engine interface: the same run
    c = BlockEngine(opts).solve(DualProblem(K, y, weights=w), C, tol=1e-6)
    assert c.smo_iters == a.smo_iters and np.array_equal(c.alpha, a.alpha)


def test_the_first_working_set_is_as_large_as_the_options_allow():
    K, y = _problem(2)
    small = DecompositionOptions(max_ws=20, max_chunk=20)
    # from alpha = 0 every point violates: the first working set is as large as allowed
    r = solve_block(K, y, 1.0, options=small.replace(max_rounds=1))
    assert r.ws_sizes == [20]
    r = solve_block(K, y, 1.0, options=small.replace(max_rounds=1, max_ws=30, max_chunk=30))
    assert r.ws_sizes == [30]


def test_a_solve_can_be_repeated_on_one_object():
    # the state is the solve's: a second solve from the same start repeats the first
    K, y = _problem(3)
    d = Decomposition(K, y, 2.0, options=DecompositionOptions(max_ws=30, max_chunk=30,
                                                              max_rounds=10_000))
    a, b = d.solve(), d.solve()
    assert a is not b and a.converged and np.array_equal(a.alpha, b.alpha)
    assert a.smo_iters == b.smo_iters


def test_a_round_under_max_time_is_sized_to_the_time_left():
    # a working set allowed to hold every point (12,000: a 1.4e8-entry block, seconds of
    # work) must not start whole under a budget of 0.5 s: the first round is capped, the
    # next sized by its measured cost, and the point returned is feasible with its gap
    import time
    X, y = make_classification(12_000, 10, n_informative=5, random_state=0, flip_y=0.1)
    y = np.where(y == 1, 1.0, -1.0)
    K = kernel_operator(X, "gaussian", h=1.0)
    opts = DecompositionOptions(max_ws=12_000, max_chunk=12_000, timed_first_ws=500)
    t0 = time.perf_counter()
    res = Decomposition(K, y, 10.0, options=opts).solve(tol=1e-3, max_time=0.5)
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.5 * 1.1 + 1.0, elapsed
    assert res.stopped == "max_time" and not res.converged
    assert max(res.ws_sizes) < 12_000 and res.ws_sizes[0] <= 500
    assert abs(y @ res.alpha) <= 1e-9 * 10.0 * y.size
    assert np.all((res.alpha >= 0) & (res.alpha <= 10.0))


@pytest.mark.parametrize("field, value", [("timed_first_ws", 1), ("timed_min_ws", 0),
                                          ("timed_round_share", 1.5)])
def test_timed_options_refuse_values_outside_their_range(field, value):
    with pytest.raises(ValueError, match=f"DecompositionOptions: {field} must be"):
        DecompositionOptions(**{field: value})


def test_no_round_cap_by_default_so_a_long_solve_converges():
    """Rounds of four points on 300: far more than 200 rounds to the tolerance. The default
    (no cap) reaches it; a cap stops short, unconverged and said so."""
    K, y = _problem(4, n=300)
    small = DecompositionOptions(max_ws=4, max_chunk=4, newton=False)
    done = solve_block(K, y, 1.0, tol=1e-3, options=small)
    assert done.converged and done.rounds > 200 and done.gap < 1e-3
    capped = solve_block(K, y, 1.0, tol=1e-3, options=small.replace(max_rounds=200))
    assert not capped.converged and capped.rounds == 200 and capped.gap >= 1e-3


class _Recorded(Decomposition):
    """A decomposition that keeps every round's free set and working set."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rounds_seen = []

    def _select_working_set(self, free):
        W = super()._select_working_set(free)
        self.rounds_seen.append((np.flatnonzero(free), W))
        return W


@pytest.mark.parametrize("seed", [0, 1])
def test_every_working_set_holds_the_free_set_once_it_outgrows_three_quarters_of_max_ws(seed):
    """A round is sized to hold the free set and a quarter of ``max_ws`` for violators. The
    selection once measured that quarter from the enlarged size instead, so a free set past
    3/4 of ``max_ws`` was dropped and the rounds took violators alone: each round's changes
    swung the free points outside W by more than the gap, and a 60,000-point fit at C = 1000
    ran for half an hour without converging (design notes). Here the free set grows to several
    times ``max_ws``: every working set holds it, and the solve reaches LIBSVM's tolerance."""
    X, y = make_classification(1500, 8, n_informative=6, n_redundant=0, flip_y=0.1,
                               class_sep=0.5, random_state=seed)
    y = np.where(y == 1, 1.0, -1.0)
    K = kernel_operator(X, "gaussian", h=2.0)
    opts = DecompositionOptions(max_ws=100, max_chunk=1500, ws_floor=25, newton=False)
    d = _Recorded(K, y, 1000.0, options=opts)
    res = d.solve(tol=1e-3)
    assert res.converged and res.gap < 1e-3
    largest = max(F.size for F, _ in d.rounds_seen)
    assert largest > 2 * opts.max_ws  # the case in question: the free set outgrew max_ws
    for F, W in d.rounds_seen:
        assert np.isin(F, W).all()
