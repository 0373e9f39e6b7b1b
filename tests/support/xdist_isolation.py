"""Services of its own for each pytest-xdist worker: its Redis database and RabbitMQ vhost.

config/test_settings.py applies this before Django reads the environment. Rewriting is
idempotent, so the celery worker processes an acceptance test starts (which inherit both the
rewritten environment and PYTEST_XDIST_WORKER, and import the same settings) keep the values.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from urllib.parse import urlsplit, urlunsplit

REDIS_DBS = "TEST_XDIST_REDIS_DBS"
URLS = ("CELERY_BROKER_URL", "TEST_COUNTERS_REDIS_URL")
# The publisher's integration tests flush a Redis database of their own (db 15 by default):
# a worker's goes to its own database too (tests within one worker run one at a time).
PUBLISHER_REDIS_URL = "FANFOLD_TEST_REDIS_URL"


def isolate_xdist_worker(environ: MutableMapping[str, str]) -> None:
    """Point the broker, counters and publisher URLs in `environ` at this xdist worker's own
    Redis database or RabbitMQ vhost; outside xdist, leave them alone."""
    worker = environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    db = redis_db_of(worker, environ.get(REDIS_DBS, ""))
    publisher = environ.get(PUBLISHER_REDIS_URL) or "redis://127.0.0.1:6379/15"
    environ[PUBLISHER_REDIS_URL] = with_redis_db(publisher, db)
    for name in URLS:
        url = environ.get(name)
        if not url:
            continue
        if url.startswith("redis"):
            environ[name] = with_redis_db(url, db)
        elif url.startswith("amqp"):
            environ[name] = with_vhost_suffix(url, worker)


def redis_db_of(worker: str, dbs: str) -> int:
    """The Redis database of xdist worker `worker` ("gw1"): the second of `dbs` ("12,13")."""
    choices = [int(db) for db in dbs.split(",") if db.strip()]
    index = int(worker.removeprefix("gw"))
    if index >= len(choices):
        raise RuntimeError(
            f"pytest-xdist worker {worker} has no Redis database of its own: set {REDIS_DBS} "
            f"to one database number per worker (now {dbs!r})"
        )
    return choices[index]


def with_redis_db(url: str, db: int) -> str:
    """`url` (redis://host:port/N?...) on database `db`."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{db}"))


def with_vhost_suffix(url: str, worker: str) -> str:
    """`url` (amqp://user:pass@host:port/vhost) on the vhost `vhost_<worker>`."""
    parts = urlsplit(url)
    vhost = parts.path.removeprefix("/").strip("/") or "fanfold_test"
    suffix = f"_{worker}"
    if not vhost.endswith(suffix):
        vhost += suffix
    return urlunsplit(parts._replace(path=f"/{vhost}"))
