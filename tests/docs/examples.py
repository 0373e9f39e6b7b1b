"""The code examples of the user guide (docs/*.md), found and run.

Every ```python block of a page runs, in order, in one namespace per page, so a later block can
use what an earlier one defined. A block right after the line `<!-- docs: skip -->` is
illustrative only (settings of another project, say) and is not run. A block right after
`<!-- docs: file PATH -->` (or `<!-- docs: file PATH append -->`) is a file of a site of the
reader's own: it is not run here, and `site_files` gives it to the tests that build that site.

`python tests/docs/examples.py docs/PAGE.md` runs one page on the demo's embedded defaults: a
fresh SQLite database, migrated, and the in-process Celery worker.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

SKIP_MARKER = "<!-- docs: skip -->"
_FILE_MARKER = re.compile(r"^<!-- docs: file (\S+)( append)? -->$")
_FENCE = re.compile(r"^(`{3,})(\S*)\s*$")


@dataclass(frozen=True)
class Example:
    page: Path
    line: int  # the line of the block's first code line, 1-based
    code: str
    skipped: bool
    marker: str = ""  # the HTML comment on the line before the block, if any


@dataclass(frozen=True)
class SiteFile:
    """A file of the reader's own site, as a page writes it (or appends it)."""

    path: str
    code: str
    append: bool


def examples(page: Path) -> list[Example]:
    """The ```python blocks of a Markdown page, in order."""
    found: list[Example] = []
    lines = page.read_text().splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        fence, language, start = match.group(1), match.group(2), index + 1
        end = start
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        if language == "python":
            previous = next((ln.strip() for ln in reversed(lines[:index]) if ln.strip()), "")
            code = "\n".join(lines[start:end]) + "\n"
            marker = previous if previous.startswith("<!-- docs:") else ""
            skipped = previous == SKIP_MARKER or _FILE_MARKER.match(previous) is not None
            found.append(Example(page, start + 1, code, skipped, marker))
        index = end + 1
    return found


def site_files(page: Path) -> list[SiteFile]:
    """The files a page tells the reader to write, in order."""
    files = []
    for example in examples(page):
        match = _FILE_MARKER.match(example.marker)
        if match is not None:
            files.append(SiteFile(match.group(1), example.code, match.group(2) is not None))
    return files


def run_page(page: Path) -> int:
    """Run the page's examples; returns how many ran. Raises whatever an example raises."""
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    ran = 0
    try:
        for example in examples(page):
            if example.skipped:
                continue
            # Padded so that a traceback names the line of the Markdown file.
            source = "\n" * (example.line - 1) + example.code
            exec(compile(source, str(page), "exec"), namespace)
            ran += 1
    finally:
        from runtime import embedded

        embedded.stop_worker()
    return ran


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    count = run_page(Path(sys.argv[1]))
    print(f"{count} examples ran")
