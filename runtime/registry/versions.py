"""Deployment versions (docs/deploying.md): this process's version and the ones it serves.

`current()` is FANFOLD_APP_VERSION, else the digest of the source files of the modules that
have registered workflows or steps in this process (runtime.core.versions.source_digest). It
is worked out again only when the registry grows, so asking costs a dict lookup on the start
path. `served()` is what this process's workers run: its own version, FANFOLD_SERVE_VERSIONS,
and the runs recorded before versions existed (version "").
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from runtime import conf
from runtime.core.versions import UNPINNED, source_digest
from runtime.registry.table import Registry, registry

_lock = threading.Lock()
_digests: dict[tuple[int, int, int], str] = {}


def module_sources(modules: set[str]) -> list[tuple[str, bytes]]:
    """(name, source bytes) of each of these imported modules: its file as it is on disk now;
    a module without a file (defined in `__main__`, a notebook) counts by its name alone."""
    found = []
    for name in modules:
        file = getattr(sys.modules.get(name), "__file__", None)
        source = b""
        if file and file.endswith(".py"):
            try:
                source = Path(file).read_bytes()
            except OSError:  # gone since it was imported: its name still counts
                source = b""
        found.append((name, source))
    return found


def default_version(table: Registry = registry) -> str:
    """The digest of the source of every module that registers a workflow or a step in
    `table`: a new one exactly when one of those files changes (or one is added)."""
    key = (id(table), len(table.workflows), len(table.steps))
    known = _digests.get(key)
    if known is None:
        with _lock:
            known = _digests[key] = source_digest(module_sources(table.modules()))
    return known


def forget_digests() -> None:
    """Work the default version out again on the next `current()` (tests that edit modules)."""
    with _lock:
        _digests.clear()


def current() -> str:
    """This process's version: FANFOLD_APP_VERSION, else `default_version()`."""
    return conf.get().APP_VERSION or default_version()


def served() -> tuple[str, ...]:
    """The versions whose runs this process's workers run: its own first, then
    FANFOLD_SERVE_VERSIONS (the unpinned "" of runs older than versions is always served)."""
    own = current()
    others = [v for v in conf.get().SERVE_VERSIONS if v != own]
    return (own, *dict.fromkeys(others))


def serves(version: str) -> bool:
    """Whether this process's workers run runs of `version`."""
    return version == UNPINNED or version in served()
