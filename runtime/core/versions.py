"""Deployment versions, the pure part: what a version may be called, the digest that is the
default one, and the Celery queue of a version's messages.

A version names the code a run started on (docs/deploying.md). By default it is a digest of
the source files of the modules that register workflows and steps, so two processes with the
same workflow code agree without configuration, and a change to any of those files makes a
new version while a change elsewhere (a view, a template) does not.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

# Letters, digits, '.', '_' and '-', up to 64: a git sha, "2026-12-06.1", a digest. The
# version is part of queue names, so nothing a broker treats specially.
VERSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
VERSION_RULE = "a version is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
# Runs recorded before versions existed: any worker may run them.
UNPINNED = ""
DIGEST_LENGTH = 12
_QUEUE_SEPARATOR = "@"


def is_version(text: str) -> bool:
    """Whether `text` is a valid version name."""
    return bool(VERSION_NAME.fullmatch(text))


def source_digest(sources: Iterable[tuple[str, bytes]]) -> str:
    """The digest of (module name, source bytes) pairs, in any order: `DIGEST_LENGTH` hex
    characters of their SHA-256, module names included so a moved file is a new version."""
    digest = hashlib.sha256()
    for name, source in sorted(sources):
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update(hashlib.sha256(source).digest())
    return digest.hexdigest()[:DIGEST_LENGTH]


def version_queue(queue: str, version: str) -> str:
    """The Celery queue of `version`'s messages that would otherwise go to `queue`; an
    unpinned run's (version "") stay on `queue` itself."""
    if version == UNPINNED:
        return queue
    return f"{queue}{_QUEUE_SEPARATOR}{version}"


def is_version_queue(queue: str) -> bool:
    """Whether `queue` is already a version's queue (`version_queue`'s output)."""
    base, sep, version = queue.rpartition(_QUEUE_SEPARATOR)
    return bool(sep and base and is_version(version))
