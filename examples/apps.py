from __future__ import annotations

from django.apps import AppConfig


class ExamplesConfig(AppConfig):
    name = "examples"
    verbose_name = "Fanfold examples"
