"""Deployment versions (docs/deploying.md): this process's version and the ones it serves.

`current()` is FANFOLD_APP_VERSION, else the digest of the source files of the modules that
have registered workflows or steps in this process when its apps were ready: the apps'
`workflows` modules and FANFOLD_WORKFLOW_MODULES (runtime.core.versions.source_digest).
`served()` is what this process's workers run: its own version, FANFOLD_SERVE_VERSIONS, and the
runs recorded before versions existed (version "").
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


_frozen: str | None = None


def freeze() -> str:
    """Fix this process's default version to the modules registered now: the runtime app's
    `ready()` calls it once the apps' workflows modules and FANFOLD_WORKFLOW_MODULES are
    imported, so that a module a command or a test imports later (and a worker does not)
    leaves the version of every process of one release the same."""
    global _frozen
    _frozen = default_version()
    return _frozen


def current() -> str:
    """This process's version: FANFOLD_APP_VERSION, else the default version as frozen at
    start-up (`freeze`), else `default_version()`."""
    return conf.get().APP_VERSION or _frozen or default_version()


def served() -> tuple[str, ...]:
    """The versions whose runs this process's workers run: its own first, then
    FANFOLD_SERVE_VERSIONS (the unpinned "" of runs older than versions is always served)."""
    own = current()
    others = [v for v in conf.get().SERVE_VERSIONS if v != own]
    return (own, *dict.fromkeys(others))


def serves(version: str) -> bool:
    """Whether this process's workers run runs of `version`."""
    return version == UNPINNED or version in served()
