"""Deployment versions: the default digest, version names and the version queues."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime import conf
from runtime.core.versions import (
    is_version,
    is_version_queue,
    source_digest,
    version_queue,
)
from runtime.registry import Registry, StepFunction, WorkflowFunction, versions

STEPS = "fanfold_version_probe_steps"
UNRELATED = "fanfold_version_probe_views"


@pytest.fixture
def probe_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / f"{STEPS}.py").write_text(
        "def charge(x):\n    return x\n\ndef order(ctx):\n    pass\n"
    )
    (tmp_path / f"{UNRELATED}.py").write_text("def view():\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in (STEPS, UNRELATED):
        sys.modules.pop(name, None)
    versions.forget_digests()


def _table() -> Registry:
    steps = importlib.import_module(STEPS)
    importlib.import_module(UNRELATED)
    table = Registry()
    table.add_step(StepFunction(steps.charge, "probe.charge", None, False))
    table.add_workflow(WorkflowFunction(steps.order, "probe.order"))
    return table


def test_versions_default_digest_changes_with_a_step_module_only(probe_modules: Path) -> None:
    table = _table()
    before = versions.default_version(table)
    assert is_version(before) and len(before) == 12

    (probe_modules / f"{UNRELATED}.py").write_text("def view():\n    return 2\n")
    versions.forget_digests()
    assert versions.default_version(table) == before

    (probe_modules / f"{STEPS}.py").write_text(
        "def charge(x):\n    return x * 2\n\ndef order(ctx):\n    pass\n"
    )
    versions.forget_digests()
    assert versions.default_version(table) != before


def test_versions_source_digest_ignores_order_and_counts_names() -> None:
    pairs = [("a", b"x = 1\n"), ("b", b"y = 2\n")]
    assert source_digest(pairs) == source_digest(list(reversed(pairs)))
    assert source_digest(pairs) != source_digest([("a", b"x = 1\n"), ("c", b"y = 2\n")])


def test_versions_queue_names() -> None:
    assert version_queue("celery", "v1") == "celery@v1"
    assert version_queue("runs", "abc123def456") == "runs@abc123def456"
    assert version_queue("celery", "") == "celery"  # runs older than versions
    assert is_version_queue("celery@v1")
    assert not is_version_queue("celery")
    assert not is_version_queue("@v1")


@pytest.mark.parametrize("name", ["", "-v1", "v 1", "v1/2", "a" * 65, "v1@x"])
def test_versions_bad_names_are_refused(name: str) -> None:
    assert not is_version(name)
    if name:
        with pytest.raises(conf.SettingsError):
            conf.parse({"APP_VERSION": name})
        with pytest.raises(conf.SettingsError):
            conf.parse({"SERVE_VERSIONS": f"v1,{name}"})


def test_versions_served_is_own_then_the_listed_ones(settings: Any) -> None:
    settings.FANFOLD = {"APP_VERSION": "v2", "SERVE_VERSIONS": "v1,v2,v0"}
    assert versions.current() == "v2"
    assert versions.served() == ("v2", "v1", "v0")
    assert versions.serves("") and versions.serves("v0") and not versions.serves("v3")
