"""Hypothesis strategies shared by the numerical tests."""
import numpy as np
from hypothesis import strategies as st


@st.composite
def point_sets(draw, n_min=1, n_max=300, d_min=1, d_max=20, clustered=None):
    """Random point clouds: uniform or clustered, at varied scales, sometimes with duplicates."""
    n = draw(st.integers(n_min, n_max))
    d = draw(st.integers(d_min, d_max))
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.sampled_from([1e-3, 0.1, 1.0, 10.0, 300.0]))
    rng = np.random.default_rng(seed)
    if clustered is None:
        clustered = draw(st.booleans())
    if clustered:
        k = draw(st.integers(1, 6))
        centers = rng.normal(size=(k, d)) * 5
        X = centers[rng.integers(0, k, n)] + rng.normal(size=(n, d)) * 0.3
    else:
        X = rng.uniform(-1, 1, size=(n, d))
    if draw(st.booleans()) and n > 2:  # duplicate points
        X[rng.integers(0, n, n // 4)] = X[0]
    return X * scale


# ---------------------------------------------------------------- adversarial classification data
# A data set is drawn as a small dict (a "spec") and built by make_adversarial_data, so a failing
# case prints as a few numbers that rebuild it exactly, in any process.

@st.composite
def adversarial_specs(draw, benign=False, n_min=2, n_max=300, d_max=6, max_classes=20):
    """Specs of classification sets an adversarial user would try.

    ``benign=False``: per-column scales 1e-300..1e300 (and offsets up to 1e300), constant
    columns, up to 90% duplicated rows, tiny n, up to ``max_classes`` classes, a class with a
    single sample, int / negative / float / string labels. ``benign=True``: what an ordinary
    fit sees (n >= 40, every class >= 10 samples, scales 1e-3..1e3, at least one non-constant
    column); a model, not an error, is the only right outcome there.
    """
    if benign:
        k = draw(st.integers(2, 4))
        n = draw(st.integers(max(n_min, 40, 10 * k), max(n_max, 40, 10 * k)))
    else:  # tiny sets (2..10 rows) as often as the rest
        n = draw(st.one_of(st.integers(n_min, max(n_min, min(n_max, 10))),
                           st.integers(n_min, n_max)))
        k = draw(st.integers(2, max(2, min(n, max_classes))))
    d = draw(st.integers(1, d_max))
    if benign:
        exps = draw(st.lists(st.integers(-3, 3), min_size=d, max_size=d))
        offsets = draw(st.lists(st.one_of(st.none(), st.integers(-3, 3)), min_size=d,
                                max_size=d))
        const = draw(st.lists(st.integers(0, d - 1), max_size=d - 1, unique=True)) \
            if d > 1 else []
        dup = draw(st.sampled_from([0.0, 0.1, 0.5]))
        singleton = False
    else:
        exp = st.one_of(st.sampled_from([-300, -200, -154, -100, 0, 100, 154, 200, 300]),
                        st.integers(-300, 300))
        exps = draw(st.lists(exp, min_size=d, max_size=d))
        offsets = draw(st.lists(st.one_of(st.none(), st.none(), exp), min_size=d, max_size=d))
        const = draw(st.lists(st.integers(0, d - 1), max_size=d, unique=True))
        dup = draw(st.sampled_from([0.0, 0.0, 0.25, 0.5, 0.9]))
        singleton = draw(st.booleans())
    return {
        "kind": "adversarial", "n": n, "d": d, "n_classes": k,
        "seed": draw(st.integers(0, 2**32 - 1)),
        "base": draw(st.sampled_from(["normal", "uniform", "clusters"])),
        "exps": exps, "offsets": offsets, "const": sorted(const),
        "const_exp": draw(st.sampled_from([0, 3] if benign else [-300, 0, 3, 300])),
        "dup": dup, "singleton": singleton, "balanced": benign,
        "informative": draw(st.booleans()),
        "labels": draw(st.sampled_from(["int", "neg", "float", "str"])),
    }


def _label_values(kind, k):
    if kind == "int":
        return np.arange(k)
    if kind == "neg":
        return -5 + 3 * np.arange(k)
    if kind == "float":  # integral floats: scikit-learn reads fractional ones as regression
        return 3.0 * np.arange(k) - 1.0
    # strings whose sorted order differs from the class index order
    return np.array([f"class {k - i:02d}-\u00e9" for i in range(k)])


def make_adversarial_data(spec):
    """(X, y) of a spec from :func:`adversarial_specs` (or ``{"kind": "normal"|"circle", ...}``
    for the fixed reproducers). Deterministic in the spec."""
    kind = spec["kind"]
    rng = np.random.default_rng(spec.get("seed", 0))
    if kind == "normal":  # rng.normal(size=(n, d)) * scale, labels from an independent draw
        X = rng.normal(size=(spec["n"], spec["d"])) * spec.get("scale", 1.0)
        y = (rng.random(spec["n"]) > 0.5).astype(int)
        return X, y
    if kind == "circle":  # uniform in [-1, 1]^2, +1 inside radius sqrt(r2)
        X = rng.uniform(-1, 1, size=(spec["n"], 2))
        y = (np.sum(X ** 2, axis=1) < spec.get("r2", 0.5)).astype(int)
        return X, y
    if kind != "adversarial":
        raise ValueError(f"unknown data kind {kind!r}")
    n, d, k = spec["n"], spec["d"], spec["n_classes"]
    if spec["base"] == "normal":
        Z = rng.normal(size=(n, d))
    elif spec["base"] == "uniform":
        Z = rng.uniform(-1, 1, size=(n, d))
    else:
        centers = rng.normal(size=(k, d)) * 3
        Z = centers[rng.integers(0, k, n)] + rng.normal(size=(n, d)) * 0.5
    if spec["dup"] and n > 1:  # rows copied from the first few (labels stay independent)
        rows = rng.choice(n, size=int(spec["dup"] * n), replace=False)
        Z[rows] = Z[rng.integers(0, max(1, n // 10), rows.size)]
    if spec.get("balanced"):  # every class n // k or n // k + 1 times
        idx = np.arange(n) % k
    elif spec["singleton"] and k > 2:
        idx = np.concatenate([np.arange(k - 1), rng.integers(0, k - 1, n - k), [k - 1]])
    else:
        idx = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])
    if spec["informative"]:  # k quantile bins of a projection, scale-free
        proj = Z @ rng.normal(size=d)
        ranks = np.argsort(np.argsort(proj, kind="stable"), kind="stable")
        idx_inf = (ranks * k) // n
        if spec["singleton"] and k > 2:
            idx_inf = np.minimum(idx_inf, k - 2)
            idx_inf[np.argmax(ranks)] = k - 1
        idx = idx_inf
    else:
        idx = idx[rng.permutation(n)]
    X = np.empty((n, d))
    for j in range(d):
        off = 0.0 if spec["offsets"][j] is None else 10.0 ** spec["offsets"][j]
        col = off + Z[:, j] * 10.0 ** spec["exps"][j]
        if not np.all(np.isfinite(col)):  # keep the input finite: it is the library's job
            col = np.clip(col, -1e307, 1e307)
        X[:, j] = col
    X[:, spec["const"]] = 10.0 ** spec["const_exp"]
    y = _label_values(spec["labels"], k)[idx]
    return X, y


def class_clusters(seed, n, d, k, spread):
    """n points of k balanced classes (labels 0..k-1, shuffled), each class around its own
    random centre ``spread`` times a standard normal away from the origin."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    rng.shuffle(y)
    X = rng.normal(size=(n, d)) + spread * rng.normal(size=(k, d))[y]
    return X, y
