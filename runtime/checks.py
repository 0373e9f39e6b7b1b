"""System checks: `manage.py check` fails on bad Fanfold configuration."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, register

from runtime import conf


@register()
def check_fanfold_settings(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    errors: list[Error] = []
    try:
        conf.parse(getattr(settings, "FANFOLD", {}))
    except conf.SettingsError as exc:
        errors.append(Error(str(exc), id="fanfold.E001"))
    if "pickle" in getattr(settings, "CELERY_ACCEPT_CONTENT", []):
        errors.append(Error("Fanfold accepts only JSON messages; remove pickle", id="fanfold.E002"))
    return errors
