"""The README and the user guide link only inside the repository, to files and headings that
exist; the README stays the short manual, with the two commands first."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bench.workers import ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$")
FENCE = re.compile(r"^(```|~~~)")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
README_MAX_LINES = 300


def _prose(page: Path) -> list[str]:
    """The page's lines outside fenced code blocks (a `](...)` inside code is not a link)."""
    lines, fenced = [], False
    for line in page.read_text().splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(page: Path) -> set[str]:
    """The `#fragment`s a Markdown renderer makes of the page's headings (GitHub's rule: lower
    case, punctuation dropped, spaces to hyphens, a repeated one numbered)."""
    seen: dict[str, int] = {}
    for line in _prose(page):
        match = HEADING.match(line)
        if match is None:
            continue
        text = re.sub(r"[`*_]|\[|\]\([^)]*\)", "", match.group(1)).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def _has_anchor(page: Path, fragment: str) -> bool:
    return not fragment or page.suffix != ".md" or fragment in anchors(page)


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """The page's link targets that leave `root`, name no file, or name no heading there."""
    broken = []
    for line in _prose(page):
        for target in LINK.findall(line):
            path, _, fragment = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            outside = "://" in target or not resolved.is_relative_to(root)
            if outside or not resolved.exists() or not _has_anchor(resolved, fragment):
                broken.append(target)
    return broken


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_docs_links_stay_in_the_repository_and_resolve(page: Path) -> None:
    assert broken_links(page) == []


def test_docs_links_a_missing_file_heading_or_outside_target_is_broken(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "other.md").write_text(
        "# A title, with `code` (2026-12-04, 06:58)\n\n## Again\n## Again\n"
    )
    assert anchors(docs / "other.md") == {"a-title-with-code-2026-12-04-0658", "again", "again-1"}
    page = docs / "page.md"
    page.write_text(
        "[a](other.md#a-title-with-code-2026-12-04-0658) [b](other.md#again-1) [c](#top)\n"
        "[d](other.md#nowhere) [e](missing.md) [f](../../outside.md) [g](https://example.com/)\n"
        "```\n[in code](not-a-file.md)\n```\n\n# Top\n"
    )
    assert broken_links(page, tmp_path) == [
        "other.md#nowhere",
        "missing.md",
        "../../outside.md",
        "https://example.com/",
    ]


def test_docs_readme_is_the_short_manual_with_the_two_commands_first() -> None:
    readme = (ROOT / "README.md").read_text()
    lines = readme.splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split()[0] for line in first_block[:2]] == ["scripts/demo", "scripts/test"]
    for script in ("scripts/demo", "scripts/test"):
        assert os.access(ROOT / script, os.X_OK), script
    # The journal of benchmark runs lives in docs/, linked from the README and the guide's index.
    assert "(docs/benchmarks.md)" in readme
    assert "(benchmarks.md)" in (ROOT / "docs" / "README.md").read_text()
    assert "## Headline figures" in readme
