"""Two releases of one workflow module, for the rolling-deploy acceptance tests.

A test writes the module's source once per release into a folder of its own (`Releases`): the
same module name, the same workflow and step names, the release's name in `RELEASE`. A worker
of a release has that folder first on its PYTHONPATH (`release_worker`); the test process
imports one release too, to start runs by name and to replay-check them. Step bodies push a
record into a Redis list (`records`), so the test counts which release's code ran what.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.workers import WorkerProcess, running_worker

RELEASES = ("v1", "v2")


class Releases:
    """The folders of each release of `module`, written from `source` (a `str.format`
    template whose `{release}` is the release's name; other fields come as `fields`)."""

    def __init__(self, root: Path, module: str, source: str, **fields: object) -> None:
        self.module = module
        self.folders: dict[str, Path] = {}
        for release in RELEASES:
            folder = root / release
            folder.mkdir()
            text = source.format(release=release, **fields)
            (folder / f"{module}.py").write_text(text)
            self.folders[release] = folder

    @contextmanager
    def imported(self, release: str) -> Iterator[Any]:
        """This process with `release`'s module imported (its workflows registered)."""
        folder = str(self.folders[release])
        sys.path.insert(0, folder)
        try:
            yield importlib.import_module(self.module)
        finally:
            sys.path.remove(folder)

    @contextmanager
    def worker(
        self,
        name: str,
        release: str,
        version: str,
        pool: str = "prefork",
        concurrency: int = 2,
        **env: str,
    ) -> Iterator[WorkerProcess]:
        """A worker running `release`'s code as deployment `version`; `TEST_WORKER_ROLE` is
        its `name`, which its step bodies may record."""
        settings = {
            "PYTHONPATH": f"{self.folders[release]}:{Path.cwd()}",
            "FANFOLD_WORKFLOW_MODULES": self.module,
            "FANFOLD_APP_VERSION": version,
            "TEST_WORKER_ROLE": name,
            **env,
        }
        with running_worker(name, pool, concurrency, **settings) as worker:
            yield worker


def records(client: Any, key: str) -> list[str]:
    """The records the step bodies pushed to `key`, oldest first."""
    return [r.decode() for r in client.lrange(key, 0, -1)]
