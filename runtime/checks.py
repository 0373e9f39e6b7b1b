"""System checks: `manage.py check` fails on bad Fanfold configuration."""

from __future__ import annotations

import os
from dataclasses import fields
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register

from runtime import conf
from runtime.payloads.offload import STORAGE_ALIAS as PAYLOAD_STORAGE

ARCHIVE_STORAGE = "fanfold_archive"


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


# The prefix Django's startproject gives its generated keys, and the demo settings' dev key.
INSECURE_KEY_PREFIX = "django-insecure-"


@register(deploy=True)
def check_secret_key_for_deploy(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """`check --deploy`: a development secret key outside DEBUG is an error, not a warning.

    Sessions, password reset links and signed values all rest on SECRET_KEY; a key that ships
    with the code is known to everyone who has the code.
    """
    key = str(getattr(settings, "SECRET_KEY", ""))
    if settings.DEBUG or not key.startswith(INSECURE_KEY_PREFIX):
        return []
    return [
        Error(
            f"SECRET_KEY is a development key (it starts with {INSECURE_KEY_PREFIX!r}) and "
            "DEBUG is off",
            hint="Set DJANGO_SECRET_KEY to a long random value kept out of the code, e.g. "
            "from `python -c 'import secrets; print(secrets.token_urlsafe(50))'`.",
            id="fanfold.E003",
        )
    ]


@register()
def check_data_lifecycle_storages(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The storages that offloaded payloads and archives go to, when they are in use.

    Without the payload storage large payloads stay in the database (a warning: a project
    that upgrades keeps working); without the archive storage an archiving purge would fail.
    """
    try:
        fanfold = conf.parse(getattr(settings, "FANFOLD", {}))
    except conf.SettingsError:
        return []  # fanfold.E001 reports it
    storages = getattr(settings, "STORAGES", {})
    errors: list[CheckMessage] = []
    if fanfold.OFFLOAD_BYTES and PAYLOAD_STORAGE not in storages:
        errors.append(
            Warning(
                f'STORAGES has no "{PAYLOAD_STORAGE}" storage: payloads over '
                f"FANFOLD_OFFLOAD_BYTES ({fanfold.OFFLOAD_BYTES} bytes) stay in the database",
                hint=f'Add STORAGES["{PAYLOAD_STORAGE}"] (e.g. a FileSystemStorage outside '
                "MEDIA_ROOT), or set FANFOLD_OFFLOAD_BYTES=0 to keep every payload in the "
                "database.",
                id="fanfold.W004",
            )
        )
    if fanfold.ARCHIVE and ARCHIVE_STORAGE not in storages:
        errors.append(
            Error(
                f'FANFOLD_ARCHIVE is on and STORAGES has no "{ARCHIVE_STORAGE}" storage',
                hint=f'Add STORAGES["{ARCHIVE_STORAGE}"], or turn FANFOLD_ARCHIVE off.',
                id="fanfold.E005",
            )
        )
    return errors


@register()
def check_unread_environment(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """`FANFOLD_*` environment variables that `settings.FANFOLD` does not carry.

    The runtime reads `settings.FANFOLD` only: a site that exports FANFOLD_PAYLOAD_KEYS but
    never reads it into its settings stores payloads in clear while its operator believes them
    encrypted. Variables that are no Fanfold setting (a project's own) are left alone.
    """
    configured = getattr(settings, "FANFOLD", {})
    names = {f.name for f in fields(conf.FanfoldSettings)}
    warnings: list[CheckMessage] = []
    for variable in sorted(os.environ):
        name = variable.removeprefix("FANFOLD_")
        if name == variable or name not in names or name in configured:
            continue
        warnings.append(
            Warning(
                f"{variable} is set in the environment, but settings.FANFOLD has no "
                f"{name!r}: Fanfold does not read it",
                hint=f'Read it in your settings (FANFOLD = {{"{name}": '
                f'os.environ["{variable}"], ...}}), or unset it.',
                id="fanfold.W007",
            )
        )
        try:
            conf.parse({name: os.environ[variable]})
        except conf.SettingsError as exc:
            warnings.append(Warning(f"{variable} in the environment: {exc}", id="fanfold.W008"))
    return warnings


@register()
def check_connection_pooler(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """What a transaction-pooling pooler in front of the default database breaks.

    With FANFOLD_DATABASE_POOLED on, the sessions of Fanfold's own (LISTEN, liveness locks,
    stream slots: runtime.store.direct) need FANFOLD_DIRECT_DATABASE_URL, and Django's
    `.iterator()` needs DISABLE_SERVER_SIDE_CURSORS. A direct URL with the setting off leaves
    statements prepared on pooled connections.
    """
    try:
        fanfold = conf.parse(getattr(settings, "FANFOLD", {}))
    except conf.SettingsError:
        return []  # fanfold.E001 reports it
    return pooler_warnings(fanfold, getattr(settings, "DATABASES", {}).get("default", {}))


def pooler_warnings(fanfold: conf.FanfoldSettings, default: dict[str, Any]) -> list[CheckMessage]:
    """check_connection_pooler's findings for these settings and default database."""
    if not str(default.get("ENGINE", "")).endswith("postgresql"):
        return []
    warnings: list[CheckMessage] = []
    if fanfold.DATABASE_POOLED and not fanfold.DIRECT_DATABASE_URL:
        sessions = (
            "the LISTEN of run notifications, the worker liveness locks and the stream slots"
            if fanfold.liveness_locks
            else "the LISTEN of run notifications and the stream slots"
        )
        warnings.append(
            Warning(
                f"FANFOLD_DATABASE_POOLED is on and FANFOLD_DIRECT_DATABASE_URL is empty: "
                f"{sessions} need a session of their own, which a pooler in transaction mode "
                "does not keep",
                hint="Set FANFOLD_DIRECT_DATABASE_URL to a postgres:// URL of the database "
                "itself (not the pooler); see the deploying guide's PgBouncer section.",
                id="fanfold.W009",
            )
        )
    if fanfold.DATABASE_POOLED and not default.get("DISABLE_SERVER_SIDE_CURSORS"):
        warnings.append(
            Warning(
                "FANFOLD_DATABASE_POOLED is on and the default database keeps server-side "
                "cursors: Django's .iterator() opens them outside transactions, which a "
                "pooler in transaction mode breaks",
                hint='Set DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True.',
                id="fanfold.W010",
            )
        )
    if fanfold.DIRECT_DATABASE_URL and not fanfold.DATABASE_POOLED:
        warnings.append(
            Warning(
                "FANFOLD_DIRECT_DATABASE_URL is set and FANFOLD_DATABASE_POOLED is off: "
                "statements are prepared on the default database's connections, which a "
                "pooler in transaction mode cannot keep",
                hint="Turn FANFOLD_DATABASE_POOLED on when the default database is pooled, "
                "unless the pooler keeps prepared statements (PgBouncer 1.21+ with "
                "max_prepared_statements).",
                id="fanfold.W011",
            )
        )
    return warnings
