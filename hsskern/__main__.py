"""Command line: ``python -m hsskern demo [options]``."""
import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m hsskern",
                                     description="hsskern command line")
    from . import __version__
    parser.add_argument("--version", action="version", version=f"hsskern {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="HSSSVC's C path on the bundled ijcnn1, told as it runs")
    demo.add_argument("--n-train", type=int, default=20000,
                      help="training subsample (default 20000; 0: all 49,990 points)")
    demo.add_argument("--n-test", type=int, default=20000,
                      help="test subsample (default 20000; 0: all 91,701 points)")
    demo.add_argument("--svc-n", type=int, default=4000,
                      help="points the grid is timed on against SVC (0: no comparison)")
    demo.add_argument("--start", choices=["auto", "admm", "decomposition"], default="auto",
                      help="HSSSVC's start: the route to the first C")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import run_demo
        return run_demo(n_train=args.n_train or None, n_test=args.n_test or None,
                        svc_n=args.svc_n, start=args.start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
