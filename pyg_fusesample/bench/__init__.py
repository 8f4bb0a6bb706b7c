"""Benchmark harness: ``python -m pyg_fusesample.bench --help``."""
