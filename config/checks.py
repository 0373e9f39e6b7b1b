"""The demo project's system checks (registered by the examples app, the demo's own)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Warning, register


@register(deploy=True)
def check_generated_secret_key(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """`check --deploy`: a key generated into var/ is secret but belongs to one machine.

    Web processes on other machines, or a container whose var/ is not kept, would each make
    their own key: sessions and signed links from one would not hold on another.
    """
    path = getattr(settings, "SECRET_KEY_FILE", None)
    if path is None:
        return []
    return [
        Warning(
            f"SECRET_KEY was generated into {path} because DJANGO_SECRET_KEY is not set",
            hint="Fine for one machine that keeps var/. With several web hosts, or containers, "
            "set DJANGO_SECRET_KEY to the same long random value everywhere.",
            id="fanfold.W006",
        )
    ]
