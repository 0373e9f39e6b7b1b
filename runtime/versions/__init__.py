"""Deployment versions (docs/deploying.md) seen from outside a process: where a run's
messages go (`routing`), what each version has in flight, and checked upgrades.

This process's own version and the ones it serves are `runtime.registry.versions`: the
version is the registered code's, and the store's claim needs it below this package.
"""
