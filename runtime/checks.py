"""System checks: `manage.py check` fails on bad Fanfold configuration."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import fields
from typing import Any

from django.apps import apps
from django.conf import settings
from django.contrib.staticfiles.finders import get_finders
from django.contrib.staticfiles.storage import ManifestFilesMixin
from django.core.checks import CheckMessage, Error, Warning, register
from django.core.files.storage import storages
from django.db import DEFAULT_DB_ALIAS, DatabaseError

from runtime import conf
from runtime.payloads.offload import STORAGE_ALIAS as PAYLOAD_STORAGE
from runtime.store.replica import ReadReplicaRouter, in_recovery

ARCHIVE_STORAGE = "fanfold_archive"
COLLECTSTATIC = "python manage.py collectstatic --noinput"

log = logging.getLogger("fanfold.checks")


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


READ_ROUTER = f"{ReadReplicaRouter.__module__}.{ReadReplicaRouter.__name__}"


@register()
def check_read_replica(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    """FANFOLD_READ_DATABASE names a replica in DATABASES, other than the default database,
    with the router that sends reads there; with `--database`, that it is in recovery."""
    try:
        alias = conf.parse(getattr(settings, "FANFOLD", {})).READ_DATABASE
    except conf.SettingsError:
        return []  # fanfold.E001 reports it
    if not alias:
        return []
    where = f"FANFOLD_READ_DATABASE names {alias!r}"
    if alias not in settings.DATABASES or alias == DEFAULT_DB_ALIAS:
        what = "the default database" if alias == DEFAULT_DB_ALIAS else "no alias of DATABASES"
        hint = "Add the streaming replica to DATABASES under its own alias and name that one."
        return [Error(f"{where}, {what}", hint=hint, id="fanfold.E020")]
    if READ_ROUTER not in [r if isinstance(r, str) else "" for r in settings.DATABASE_ROUTERS]:
        hint = f'Add "{READ_ROUTER}" to DATABASE_ROUTERS.'
        return [Error(f"{where}, and no router sends reads there", hint=hint, id="fanfold.E021")]
    if not databases:
        return []  # what the server is: `check --database ...`, as Django's database checks
    try:
        replica = in_recovery(alias)
    except DatabaseError as exc:
        return [Warning(f"{where}, which cannot be reached: {exc}", id="fanfold.W020")]
    if not replica:
        hint = "Name a streaming replica (a hot standby); reads that may lag go there."
        return [Error(f"{where}, a primary (pg_is_in_recovery() is false)", hint=hint,
                      id="fanfold.E022")]  # fmt: skip
    return []


@register()
def check_static_files_collected(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """With DEBUG off and a manifest static storage (WhiteNoise's, Django's), every page
    that links a static file (the admin's login, Swagger UI) answers 500 for a file the
    manifest lacks: the files were never collected, or collected before a pull or an upgrade
    added some. A warning, so `migrate` before `collectstatic` still runs."""
    return [
        Warning(problem, hint=f"Run `{COLLECTSTATIC}`.", id="fanfold.W012")
        for problem in static_collection_problems()
    ]


def static_collection_problems() -> list[str]:
    """What check_static_files_collected finds: the manifest missing, or the static files
    the finders see that it does not list (a stale collection). Empty with DEBUG on or a
    storage without a manifest."""
    if settings.DEBUG or not apps.is_installed("django.contrib.staticfiles"):
        return []
    storage = storages["staticfiles"]
    if not isinstance(storage, ManifestFilesMixin):
        return []
    if not settings.STATIC_ROOT:
        return ["STATIC_ROOT is not set, so the static files cannot be collected: with DEBUG "
                "off, pages that link them (/admin/login/, /api/docs/) answer 500"]  # fmt: skip
    where = f"{settings.STATIC_ROOT}/{storage.manifest_name}"
    content = storage.read_manifest()
    if content is None:
        return [
            f"The static files are not collected ({where} is missing): with DEBUG off, "
            "pages that link them (/admin/login/, /api/docs/) answer 500"
        ]
    try:
        listed = set(json.loads(content).get("paths", {}))
    except (ValueError, AttributeError):
        return [f"The static files' manifest {where} is not valid JSON: collect them again"]
    missing = sorted(found_static_paths() - listed)
    if not missing:
        return []
    return [
        f"The static files' collection is stale: {len(missing)} file(s) the apps ship are not "
        f"in {where} (e.g. {missing[0]!r}), and pages that link them answer 500"
    ]


def found_static_paths() -> set[str]:
    """The paths of every static file the finders see, as `collectstatic` would collect them."""
    ignore = list(apps.get_app_config("staticfiles").ignore_patterns)  # type: ignore[attr-defined]
    return {
        path.replace(os.sep, "/") for finder in get_finders() for path, _ in finder.list(ignore)
    }


def log_static_collection_problems(process: str) -> None:
    """Say at a worker's or web process's start what check_static_files_collected finds."""
    for problem in static_collection_problems():
        log.error("%s start: %s (fanfold.W012). Run `%s`.", process, problem, COLLECTSTATIC)
