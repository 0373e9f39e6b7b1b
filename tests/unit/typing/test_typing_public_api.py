"""The public API's typing examples (tests/typing/public_api.py) pass mypy and pyright, and the
lines marked WRONG are errors to both: with their ignore comments taken out, each checker
reports exactly those lines."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "tests" / "typing" / "public_api.py"
PYRIGHT_CONFIG = ROOT / "tests" / "typing" / "pyrightconfig.json"
IGNORES = re.compile(r"\s*# type: ignore\[[^]]*\]|\s*# pyright: ignore\[[^]]*\]")


def _wrong_lines() -> set[int]:
    lines = EXAMPLES.read_text().splitlines()
    wrong = {n for n in range(2, len(lines) + 1) if lines[n - 2].lstrip().startswith("# WRONG")}
    assert wrong and all(
        "# type: ignore[" in lines[n - 1] and "# pyright: ignore[" in lines[n - 1] for n in wrong
    )
    return wrong


@pytest.fixture
def unchecked(tmp_path: Path) -> Path:
    """The examples with the ignore comments taken out (same lines)."""
    copy = tmp_path / "public_api_unchecked.py"
    copy.write_text(IGNORES.sub("", EXAMPLES.read_text()))
    return copy


def _error_lines(output: str, path: Path) -> set[int]:
    # By file name: mypy's cache may print the path a file of that module had before.
    found = re.findall(rf"(?:^|/| ){re.escape(path.name)}:(\d+):(?:\d+)?[: -]+error", output, re.M)
    return {int(n) for n in found}


def test_typing_public_api_passes_mypy_and_flags_the_wrong_lines(unchecked: Path) -> None:
    mypy = [sys.executable, "-m", "mypy", "--show-column-numbers"]
    done = subprocess.run(
        [*mypy, str(EXAMPLES), str(unchecked)], cwd=ROOT, capture_output=True, text=True
    )
    assert _error_lines(done.stdout, EXAMPLES.relative_to(ROOT)) == set(), done.stdout
    assert _error_lines(done.stdout, unchecked) == _wrong_lines(), done.stdout


def test_typing_public_api_passes_pyright_and_flags_the_wrong_lines(unchecked: Path) -> None:
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if pyright is None:
        pytest.skip("pyright is not installed (the dev extra has it)")
    checked = subprocess.run(
        [pyright, "-p", str(PYRIGHT_CONFIG), str(EXAMPLES), str(unchecked)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert _error_lines(checked.stdout, EXAMPLES) == set(), checked.stdout
    assert _error_lines(checked.stdout, unchecked) == _wrong_lines(), checked.stdout
