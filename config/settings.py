"""Django settings, all driven by the environment (see README "Configuration")."""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path

from config import secret_key
from config.database_url import database

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("FANFOLD_VAR_DIR", BASE_DIR / "var"))


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def _list(name: str, default: str = "") -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


DEBUG = _flag("DJANGO_DEBUG")
# DJANGO_SECRET_KEY wins; without it a random key is made once into var/secret_key (0600) and
# reused, so no key ships with the code. `check --deploy` warns about a generated key
# (fanfold.W006: it belongs to this machine) and fails on a "django-insecure-" one (E003).
SECRET_KEY_FILE: Path | None = None
if os.environ.get("DJANGO_SECRET_KEY"):
    SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
else:
    SECRET_KEY_FILE = VAR_DIR / "secret_key"
    SECRET_KEY = secret_key.read_or_create(SECRET_KEY_FILE)
ALLOWED_HOSTS = _list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = _list("DJANGO_CSRF_TRUSTED_ORIGINS")

# --- HTTPS (all off by default: the demo and the tests serve plain HTTP on localhost) -----
# Behind a TLS-terminating proxy set DJANGO_SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_PROTO,https
# (only if the proxy always sets or strips that header).
SECURE_SSL_REDIRECT = _flag("DJANGO_SECURE_SSL_REDIRECT")
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_SECURE_HSTS_SECONDS") or 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _flag("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = _flag("DJANGO_SECURE_HSTS_PRELOAD")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = _flag("DJANGO_SECURE_COOKIES")
_proxy_header = _list("DJANGO_SECURE_PROXY_SSL_HEADER")
SECURE_PROXY_SSL_HEADER = (_proxy_header[0], _proxy_header[1]) if len(_proxy_header) == 2 else None

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # WhiteNoise serves static files under runserver too, the same way as in production.
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI as static files, not from a CDN
    "runtime",
    "api",
    "examples",
    "bench",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

_default_sqlite = f"sqlite:///{VAR_DIR / 'fanfold.sqlite3'}"
# Connections are kept for a minute, not opened anew for every request and every task: a
# worker's run otherwise pays a PostgreSQL connect before its first query. One that failed is
# closed at the next request's or task's edge.
DATABASES = {"default": database(os.environ.get("DATABASE_URL") or _default_sqlite, 60)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    # WAL lets the checkpoint writer commit while request and worker threads read.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
if os.environ.get("FANFOLD_DATABASE_POOLED", "").lower() in {"1", "true", "yes", "on"}:
    # DATABASE_URL names a pooler in transaction mode (docs/deploying.md, PgBouncer): Django's
    # .iterator() must not open server-side cursors there.
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
USE_I18N = False
STATIC_URL = "static/"
# `manage.py collectstatic` (scripts/bootstrap runs it) fills STATIC_ROOT; WhiteNoise serves it
# with DEBUG on or off, under runserver and gunicorn alike. With DEBUG on it also serves the
# apps' files straight from their folders.
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT") or VAR_DIR / "static")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed, compressed copies: far-future cache headers are safe on them.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    # Payloads over FANFOLD_OFFLOAD_BYTES, and runs archived before their deletion
    # (docs/data-lifecycle.md). Private files: no URL serves them, only their owner reads them.
    "fanfold_payloads": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {
            "location": VAR_DIR / "payloads",
            "file_permissions_mode": 0o600,
            "directory_permissions_mode": 0o700,
        },
    },
    "fanfold_archive": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {
            "location": VAR_DIR / "archive",
            "file_permissions_mode": 0o600,
            "directory_permissions_mode": 0o700,
        },
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

# --- Celery --------------------------------------------------------------------------------
# "memory://" is the embedded broker: an in-process worker thread serves it (runtime.embedded).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or "memory://localhost/"
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery closes Django's database connections before and after every task unless told to
# reuse them: a run's task would open a new PostgreSQL connection each time. Reused here;
# Fanfold's workers still close a failed or old one around each task, as Django does around
# each request (CONN_MAX_AGE above).
CELERY_DB_REUSE_MAX = 500
CELERY_TASK_DEFAULT_QUEUE = "fanfold"
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {"visibility_timeout": 3600}
# "quorum" makes the default queue a RabbitMQ quorum queue (replicated); "classic" is durable.
CELERY_TASK_DEFAULT_QUEUE_TYPE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE_TYPE") or "classic"
if CELERY_BROKER_URL.startswith("amqp"):
    # Celery's own sends (a run's start, timers) wait for the broker's confirm too; the
    # branch batches always do (publisher.amqp_confirms).
    CELERY_BROKER_TRANSPORT_OPTIONS["confirm_publish"] = True
    if CELERY_TASK_DEFAULT_QUEUE_TYPE == "classic":
        # Message priorities 0-9 (runtime.dispatch.broker_priority). RabbitMQ keeps a queue's
        # arguments: a queue declared before this must be deleted once (docs/flow-control.md).
        # Quorum queues take no x-max-priority.
        CELERY_TASK_QUEUE_MAX_PRIORITY = 9
if CELERY_BROKER_URL.startswith(("redis", "rediss", "sentinel")):
    # kombu's Redis transport emulates priorities with one list per step; ten steps give every
    # run priority its own list, and BRPOP reads them in order (list 0, the queue's own
    # name, first). "priority" takes the queues themselves in order too (round robin by default).
    CELERY_BROKER_TRANSPORT_OPTIONS.update(
        priority_steps=list(range(10)), sep=":", queue_order_strategy="priority"
    )
if CELERY_BROKER_URL.startswith("memory://"):
    # kombu's in-memory transport polls its queues once a second; the embedded worker would
    # then take fan-out branches at about `concurrency` per second.
    CELERY_BROKER_TRANSPORT_OPTIONS["polling_interval"] = 0.01

# --- DRF ---------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.LimitedJSONParser"],
    "EXCEPTION_HANDLER": "api.error_envelope.exception_handler",
    # Per user, at FANFOLD_API_USER_RATE; the callback endpoint, the only one without a user
    # (its token is the credential), has its own per-client rate.
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.ApiUserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"callbacks": "600/minute"},
}
# Throttling counts requests here; per process, which is enough to blunt token guessing and
# floods. Point it at Redis (django.core.cache.backends.redis.RedisCache) to count across them.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
SPECTACULAR_SETTINGS = {
    "TITLE": "Fanfold API",
    "DESCRIPTION": "Start, inspect, cancel and call back durable workflow runs.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Served from drf-spectacular-sidecar's static files: the docs work on a closed network.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Swagger UI would otherwise send the schema to its public online validator.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "runtime.models.states.RUN_STATUS_CHOICES",
        "StepKindEnum": "runtime.models.states.STEP_KIND_CHOICES",
        "EventTypeEnum": "runtime.models.states.EVENT_TYPE_CHOICES",
        "CallbackStatusEnum": "api.serializers.CALLBACK_STATUSES",
        "ParameterKindEnum": "api.serializers.PARAMETER_KINDS",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Callback tokens in request paths are credentials: masked in every record logged here.
    "filters": {"callback_tokens": {"()": "api.log_masking.CallbackTokenFilter"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["callback_tokens"]},
    },
    "loggers": {
        name: {"filters": ["callback_tokens"]} for name in ("django.request", "django.server")
    },
    "root": {"handlers": ["console"], "level": os.environ.get("FANFOLD_LOG_LEVEL", "WARNING")},
}

# --- Fanfold (see runtime.conf for every FANFOLD_* setting and its default) --------------------
# FANFOLD_VAR_DIR, FANFOLD_LOG_LEVEL and FANFOLD_READ_DATABASE_URL belong to these settings,
# not to the runtime, and FANFOLD_TEST_* to the test suite.
_PROJECT_ONLY = {"FANFOLD_VAR_DIR", "FANFOLD_LOG_LEVEL", "FANFOLD_READ_DATABASE_URL"}
FANFOLD = {
    key.removeprefix("FANFOLD_"): value
    for key, value in os.environ.items()
    if key.startswith("FANFOLD_")
    and key not in _PROJECT_ONLY
    and not key.startswith("FANFOLD_TEST_")
}

# A streaming replica for the reads that may lag (docs/deploying.md, "A read replica"): its
# own DATABASES alias, the router that sends reads there, and FANFOLD_READ_DATABASE naming it.
# Tests read it as a mirror of the test database (physical replication copies that too).
if os.environ.get("FANFOLD_READ_DATABASE_URL"):
    DATABASES["replica"] = database(os.environ["FANFOLD_READ_DATABASE_URL"], 60)
    # A replica that does not answer is skipped; a connect must not hang a page meanwhile.
    DATABASES["replica"]["OPTIONS"] = {
        "connect_timeout": 2,
        **DATABASES["replica"].get("OPTIONS", {}),
    }
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
    DATABASE_ROUTERS = ["runtime.store.replica.ReadReplicaRouter"]
    FANFOLD.setdefault("READ_DATABASE", "replica")

# Django's Tasks framework (django.tasks on Django 6, the django_tasks backport on 5.2) runs
# its tasks as Fanfold runs: docs/django-tasks.md.
if find_spec("django.tasks") is not None or find_spec("django_tasks") is not None:
    TASKS = {
        "default": {
            "BACKEND": "runtime.django_tasks.backend.FanfoldBackend",
            # Each a Celery queue ("default": the run queue); workers pick theirs with -Q.
            "QUEUES": _list("DJANGO_TASKS_QUEUES") or ["default"],
            "OPTIONS": {"retry": {"max_attempts": 3}},
        }
    }
    # `bench tasks` compares with django-tasks-db's worker where it is installed (extra `bench`).
    if find_spec("django_tasks_db") is not None:
        INSTALLED_APPS.append("django_tasks_db")
        TASKS["db"] = {"BACKEND": "django_tasks_db.DatabaseBackend"}
