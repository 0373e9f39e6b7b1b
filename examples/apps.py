from __future__ import annotations

from django.apps import AppConfig

import config.checks  # noqa: F401  (registers the demo project's checks)


class ExamplesConfig(AppConfig):
    name = "examples"
    verbose_name = "Fanfold examples"
