"""Benchmarks of the toolkit on this machine: `python -m bench.run` (see bench/README.md)."""
