"""hsskern's benchmark harness: ``python -m bench SUITE ...`` (see bench/README.md)."""
