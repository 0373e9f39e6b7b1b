"""The user guide's code examples run, so they cannot rot (see tests/docs/examples.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.workers import ROOT
from tests.docs.examples import SKIP_MARKER, examples

PAGES = sorted((ROOT / "docs").glob("*.md"))
# Pages with only prose, shell or illustrative blocks have nothing to run.
RUNNABLE = [page for page in PAGES if any(not e.skipped for e in examples(page))]
RUNNER = Path(__file__).with_name("examples.py")

pytestmark = pytest.mark.docs


def _embedded_env(tmp_path: Path) -> dict[str, str]:
    """The demo's embedded defaults (SQLite under tmp_path, in-process worker), fast sweeps."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FANFOLD_", "DJANGO_", "CELERY_", "DATABASE_URL"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        FANFOLD_VAR_DIR=str(tmp_path),
        FANFOLD_SWEEP_INTERVAL="0.5",
        FANFOLD_LEASE_SECONDS="5",
    )
    return env


@pytest.mark.parametrize("page", RUNNABLE, ids=[p.name for p in RUNNABLE])
def test_docs_examples_run(page: Path, tmp_path: Path) -> None:
    runnable = [e for e in examples(page) if not e.skipped]
    done = subprocess.run(
        [sys.executable, str(RUNNER), str(page)],
        cwd=ROOT,
        env=_embedded_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{page.name}:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    assert done.stdout.strip().endswith(f"{len(runnable)} examples ran")


def test_docs_examples_finds_blocks_and_the_skip_marker(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        f"Text.\n\n```python\nx = 1\n```\n\n{SKIP_MARKER}\n```python\nimport nowhere\n```\n\n"
        "```bash\necho no\n```\n```python\nassert x == 1\n```\n"
        "````markdown\n```python\nnot run\n```\n````\n"
    )
    found = examples(page)
    assert [(e.line, e.code, e.skipped) for e in found] == [
        (4, "x = 1\n", False),
        (9, "import nowhere\n", True),
        (16, "assert x == 1\n", False),
    ]


def test_docs_examples_every_page_is_reachable_from_the_index() -> None:
    index = (ROOT / "docs" / "README.md").read_text()
    missing = [p.name for p in PAGES if p.name != "README.md" and f"({p.name})" not in index]
    assert missing == []
