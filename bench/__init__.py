"""Benchmarks of the toolkit on this machine: `python -m diaforge.bench.run` (see bench/README.md)."""
