"""The wheel, built once per session from a copy of this checkout's source."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from bench.workers import ROOT
from tests.support.site import clean_env, run

# Never copied into the build: a stale build/ of an earlier layout would leak into the wheel.
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "var", "artifacts", "build", "*.egg-info", "__pycache__", ".*_cache"
)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of this checkout's source."""
    source = tmp_path_factory.mktemp("build") / "fanfold"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    dist = tmp_path_factory.mktemp("dist")
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist)]
    run([*pip_wheel, str(source)], cwd=source, env=clean_env())
    (built,) = dist.glob("fanfold-*.whl")
    return built
