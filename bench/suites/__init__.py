"""The suites of ``python -m bench`` (registered in bench/run.py)."""
