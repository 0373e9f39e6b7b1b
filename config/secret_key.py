"""The demo project's secret key when DJANGO_SECRET_KEY is not set: random, made once per
checkout into `var/secret_key` (mode 0600) and read from there afterwards.

No key ships with the code, so a fresh checkout serving with DEBUG off never signs sessions
with a key everyone knows. Several processes may start at once (gunicorn's workers, the test
suite's servers): the file appears whole or not at all, and the first writer wins.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured


def read_or_create(path: Path) -> str:
    """The key stored at `path`, made (atomically, mode 0600) if there is none yet."""
    if not path.exists():
        _create(path)
    key = path.read_text().strip()
    if len(key) < 50:
        raise ImproperlyConfigured(
            f"{path} holds no usable secret key: delete it to have a new one made, or set "
            "DJANGO_SECRET_KEY"
        )
    return key


def _create(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # mkstemp makes the file 0600; link() publishes it whole and fails if another
        # process got there first, whose key then stands.
        fd, temporary = tempfile.mkstemp(prefix=".secret_key.", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_urlsafe(50) + "\n")
                out.flush()
                os.fsync(out.fileno())
            with contextlib.suppress(FileExistsError):
                os.link(temporary, path)
        finally:
            os.unlink(temporary)
    except OSError as exc:
        raise ImproperlyConfigured(
            f"cannot write a secret key to {path} ({exc}); set DJANGO_SECRET_KEY"
        ) from exc
