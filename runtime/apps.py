"""The runtime app: registers checks and imports every workflow module at start-up."""

from __future__ import annotations

import importlib

from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class RuntimeConfig(AppConfig):
    name = "runtime"
    verbose_name = "Fanfold runtime"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from runtime import checks, conf  # noqa: F401  (registers the system checks)

        autodiscover_modules("workflows")
        try:
            modules = conf.get().WORKFLOW_MODULES
        except conf.SettingsError:
            modules = ()  # reported by the system check
        for module in modules:
            importlib.import_module(module)
