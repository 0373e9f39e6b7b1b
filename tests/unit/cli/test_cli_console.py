"""The operator command's tables and progress bar."""

from __future__ import annotations

from runtime.management.console import MAX_CELL, ProgressBar, table


def test_cli_table_aligns_columns_and_shows_missing_values() -> None:
    text = table(("run", "status"), [("a1", "completed"), ("b22222", None)])
    assert text.splitlines() == [
        "RUN     STATUS",
        "a1      completed",
        "b22222  —",
    ]


def test_cli_table_cuts_long_cells() -> None:
    line = table(("message",), [("x" * 500,)]).splitlines()[1]
    assert len(line) == MAX_CELL and line.endswith("…")


def test_cli_progress_bar_blanks_what_a_shorter_line_leaves_and_ends_the_line() -> None:
    drawn: list[str] = []
    bar = ProgressBar(drawn.append, 2, "replaying", interval=0.0)
    bar.advance(note="1 mismatched")
    bar.advance()
    bar.close()
    first, second, end = drawn
    assert first == "\rreplaying [" + "#" * 15 + "." * 15 + "] 1/2  1 mismatched"
    assert second.rstrip() == "\rreplaying [" + "#" * 30 + "] 2/2"
    assert len(second) == len(first)
    assert end == "\n"
