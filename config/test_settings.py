"""Settings for the test suite: the real services by default, short leases, fast sweeps.

pytest-django imports this before any conftest runs, so the defaults must be set here.
`scripts/test` exports the same values; an explicit environment wins.

Under pytest-xdist each worker (PYTEST_XDIST_WORKER=gwN) gets services of its own: pytest-django
suffixes the test database, and here the Redis database (the Nth of TEST_XDIST_REDIS_DBS, for the
broker and the step counters alike), the RabbitMQ virtual host (`<vhost>_gwN`, made beforehand by
scripts/rabbitmq-vhost) and the folder of test files. They are written back to the environment,
so the worker processes an acceptance test starts inherit them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tests.support.xdist_isolation import isolate_xdist_worker

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/fanfold")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/14")
os.environ.setdefault("FANFOLD_LEASE_SECONDS", "2")
os.environ.setdefault("FANFOLD_SWEEP_INTERVAL", "0.5")
# One deployment version for the test process and the workers it starts (which load other
# workflow modules, so their default digests differ): tests of versions set their own.
os.environ.setdefault("FANFOLD_APP_VERSION", "tests")

isolate_xdist_worker(os.environ)

from config.settings import *  # noqa: E402, F403

# In-process tests run no collectstatic: serve the apps' static files from their folders, and
# name them unhashed (the manifest of hashed names is made by collectstatic). The browser tests
# run gunicorn on config.settings with a real collectstatic instead.
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Offloaded payloads and archives of test runs go to the temporary folder, not to var/: one
# folder that the test process and its worker processes share (files are named by run id).
# Each pytest-xdist worker has a folder of its own.
_TEST_FILES = Path(tempfile.gettempdir()) / "fanfold-tests"
_TEST_FILES /= os.environ.get("PYTEST_XDIST_WORKER", "")
for _alias in ("fanfold_payloads", "fanfold_archive"):
    STORAGES[_alias] = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": _TEST_FILES / _alias.removeprefix("fanfold_")},
    }

# The read replica of the test cluster (scripts/pg-replica, port 5435): a mirror of the test
# database, which streaming replication copies. The tests that read it (tests/integration/
# replica) name it with FANFOLD_READ_DATABASE; the others never connect to it.
if "replica" not in DATABASES:  # noqa: F405
    DATABASES["replica"] = {  # noqa: F405
        **DATABASES["default"],  # noqa: F405
        "HOST": "127.0.0.1",
        "PORT": os.environ.get("TEST_REPLICA_PORT", "5435"),
        "OPTIONS": {"connect_timeout": 2},
        "TEST": {"MIRROR": "default"},
    }
    DATABASE_ROUTERS = ["runtime.store.replica.ReadReplicaRouter"]
