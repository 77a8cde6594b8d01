"""Benchmarks for s3task (issue 8): ``python bench/run.py`` (``--quick`` for CI). See BENCHMARKS.md."""
