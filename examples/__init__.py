"""Example workflows used by `manage.py demo` and the benchmarks."""
