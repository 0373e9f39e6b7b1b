"""The benchmark app: its command, its no-op Celery tasks and worker processes."""

from __future__ import annotations

from django.apps import AppConfig

from bench import counting


class BenchConfig(AppConfig):
    name = "bench"
    verbose_name = "Fanfold benchmarks"

    def ready(self) -> None:
        counting.connect_in_worker()
