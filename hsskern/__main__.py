"""Command line: ``python -m hsskern demo``."""
import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m hsskern",
                                     description="hsskern command line")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="C-grid training run on the bundled ijcnn1 data set")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import run_demo
        return run_demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
