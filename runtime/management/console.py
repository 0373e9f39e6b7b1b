"""Human output of the operator's commands: plain-text tables and a progress bar."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

MAX_CELL = 60  # characters of one table cell; longer values end with "…"


def _cell(value: Any) -> str:
    text = "—" if value is None or value == "" else str(value)
    text = text.replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """`rows` under `headers`, in columns as wide as their widest cell."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines) + "\n"


class ProgressBar:
    """A one-line bar drawn through `write` (to stderr), redrawn at most every `interval` s."""

    WIDTH = 30

    def __init__(
        self, write: Callable[[str], None], total: int, label: str, interval: float = 0.1
    ) -> None:
        self._write = write
        self._total = total
        self._label = label
        self._interval = interval
        self._drawn = 0.0
        self._shown = -1  # `done` when last drawn
        self._width = 0  # of the line last drawn, to blank what a shorter one leaves
        self._note = ""
        self.done = 0

    def advance(self, n: int = 1, note: str = "") -> None:
        self.done += n
        self._note = note
        now = time.monotonic()
        if now - self._drawn >= self._interval or self.done >= self._total:
            self._drawn = now
            self._draw()

    def _draw(self) -> None:
        filled = self.WIDTH * min(self.done, self._total) // max(self._total, 1)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        extra = f"  {self._note}" if self._note else ""
        line = f"{self._label} [{bar}] {self.done}/{self._total}{extra}"
        self._write("\r" + line.ljust(self._width))
        self._width = len(line)
        self._shown = self.done

    def close(self) -> None:
        """Draw the final state (if not drawn yet) and end the line."""
        if self._shown != self.done:
            self._draw()
        self._write("\n")
