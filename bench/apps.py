"""The benchmark app: its command, its no-op Celery task and worker processes."""

from __future__ import annotations

from django.apps import AppConfig


class BenchConfig(AppConfig):
    name = "bench"
    verbose_name = "Fanfold benchmarks"
