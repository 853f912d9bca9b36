"""Kernel entries per second where the Gaussian's exponent underflows, on one thread.

    python bench/kernel_underflow.py [--repeat 5]

A 2,000 x 20,000 block of skin_nonskin's raw 0-255 points (../shared/datasets/skin_nonskin.npz;
random points in the same cube when absent) at h = 1, where most exponents are below -708,
and at h = 100, where none is. Run it on two builds to compare them; the README quotes it.
"""
import argparse
import sys

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import load_shared, measure, write_result  # noqa: E402

from hsskern import kernel_operator  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    data = load_shared("skin_nonskin")
    if data is not None:
        X, source = data[0][:22000], "skin_nonskin"
    else:
        X, source = np.random.default_rng(0).integers(0, 256, (22000, 3)).astype(float), "cube"
    I, J = np.arange(2000), np.arange(2000, 22000)
    rows = []
    with threadpool_limits(1):
        for h in (1.0, 100.0):
            K = kernel_operator(X, "gaussian", h=h)
            t, _, B = measure(lambda: K.submatrix(I, J), repeat=args.repeat)
            d2 = ((X[I, None, :] - X[None, J, :]) ** 2).sum(-1)
            rows.append({"h": h, "seconds": t, "entries_per_s": B.size / t,
                         "underflowing": float(np.mean(d2 / (2 * h * h) > 708.0))})
            print(f"h = {h:g}: {B.size / t / 1e6:.0f} M entries/s, "
                  f"{100 * rows[-1]['underflowing']:.1f} % of exponents below -708")
    print("wrote", write_result("kernel_underflow", {"data": source, "runs": rows}))


if __name__ == "__main__":
    main()
