"""The README and the user guide link only inside the repository, to files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.workers import ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_docs_links_stay_in_the_repository_and_resolve(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text()):
        path = target.split("#", 1)[0]
        resolved = (page.parent / path).resolve()
        if "://" in target or not resolved.is_relative_to(ROOT) or not resolved.exists():
            broken.append(target)
    assert broken == []
