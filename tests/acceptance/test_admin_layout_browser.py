"""The run list and the run page read well at 1280, 1400 and 1920 px and on a 390 px phone.

At every width, under gunicorn with the collected static files, the page's own layout is read
back through its JavaScript: the page never scrolls sideways and no column header is cut; at
1280 px and wider no table scrolls sideways inside its box either, while on the phone a wide
table scrolls inside its own box (never past the page's edge). At 1400 px a run's id and its
step counts stay on one line, and the timeline's legend keeps each swatch with its label at
every width.
Screenshots of every page and width go to `artifacts/admin-layout-*.png`.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from runtime.agents.approvals import record_requests
from runtime.models import Run, RunStatus, StepStatus
from tests.acceptance.test_admin_browser import (
    browser_page,
    chromium,
    log_in,
    off_site,
    operator,
    server,
    sync_api,
)
from tests.support.fanout_rows import fanout_run
from tests.support.run_rows import add_events, add_steps, finished_run, make_run, waiting_run
from tests.support.workers import ARTIFACTS

__all__ = ["chromium", "operator", "server"]

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = (1280, 1400, 1920)
PHONE = 390
LONG_TASK = "shop.notifications.tasks.send_order_confirmation_email"

# What the page's layout says of itself: the page's own sideways overflow, the column headers
# whose text is wider than their box, the tables wider than the page that do not scroll inside
# a box of their own, and the boxes holding a table that scroll sideways.
LAYOUT_JS = """() => {
  const page = document.scrollingElement;
  const shown = e => e.getClientRects().length > 0;
  const cut = [...document.querySelectorAll('th')].filter(shown)
    .filter(th => th.scrollWidth > th.clientWidth + 1)
    .map(th => `${th.closest('table').id || th.closest('fieldset, div[id]')?.id}: ${
      th.textContent.trim() || th.className}`);
  const scrolls = e => {
    for (let box = e.parentElement; box && box !== document.body; box = box.parentElement) {
      const style = getComputedStyle(box);
      if (['auto', 'scroll'].includes(style.overflowX) && box.clientWidth < page.clientWidth)
        return true;
    }
    return ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  };
  const escaping = [...document.querySelectorAll('table')].filter(shown)
    .filter(t => t.getBoundingClientRect().right > page.clientWidth + 1 && !scrolls(t))
    .map(t => t.id || t.closest('fieldset, div[id]')?.id || t.className);
  const boxed = [...document.querySelectorAll('*')].filter(shown)
    .filter(e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX))
    .filter(e => e.matches('table') || e.querySelector('table'))
    .filter(e => e.scrollWidth > e.clientWidth + 1)
    .map(e => `${e.id || e.className || e.tagName}: ${e.scrollWidth} > ${e.clientWidth}`);
  return {scrollWidth: page.scrollWidth, clientWidth: page.clientWidth, cut, escaping, boxed};
}"""

# Each legend entry (swatch and label) on one line, and the entries' tops: a label left alone
# on a line is an entry whose swatch sits on the line above.
LEGEND_JS = """() => [...document.querySelectorAll('#run-timeline .fanfold-legend-item')].map(
  item => ({text: item.textContent.trim(), lines: new Set([...item.getClientRects()]
    .map(r => Math.round(r.top))).size}))"""

# How many lines each cell's text takes.
LINES_JS = """cells => cells.map(cell => {
  const range = document.createRange();
  range.selectNodeContents(cell);
  const rects = [...range.getClientRects()].filter(r => r.height > 0);
  const line = Math.min(...rects.map(r => r.height));
  const top = Math.min(...rects.map(r => r.top)), bottom = Math.max(...rects.map(r => r.bottom));
  return Math.round((bottom - top) / line);
})"""


def sample_runs(owner: User) -> dict[str, Run]:
    """Runs like a site's list holds: long task paths, a 1,200-step run, failures, waits."""
    done = finished_run(step_count=13, owner=owner)
    task = make_run(LONG_TASK, RunStatus.COMPLETED, owner=owner)
    add_steps(task, 1, name=LONG_TASK)
    big = make_run("reports.nightly.rebuild_customer_ledgers", RunStatus.FAILED, owner=owner)
    add_steps(big, 1180, name="reports.nightly.ledger_page")
    failed = add_steps(
        big, 20, name="reports.nightly.ledger_page", status=StepStatus.FAILED, first_position=1180
    )
    big.error = {
        "type": "StepFailed",
        "message": "ledger page 1180 failed: " + "the upstream ledger service answered 503; " * 6,
        "traceback": "Traceback (most recent call last):\n" + '  File "ledger.py", line 9\n' * 8,
    }
    big.save(update_fields=["error"])
    add_events(big, [("run_created", None), ("run_started", None), ("step_failed", failed[0])])
    asleep = waiting_run(owner=owner)
    record_requests(
        str(asleep.pk),
        str(uuid.uuid4()),
        [{"tool_call_id": "call-1", "tool_name": "refund", "arguments": {"order": 7}}],
    )
    fan = fanout_run(120, lanes=8, with_child=True)
    for _ in range(8):
        make_run("examples.sequential_sum", RunStatus.COMPLETED, owner=owner)
    return {"done": done, "big": big, "asleep": asleep, "fan": fan}


def check_layout(page: Any, name: str, width: int) -> dict[str, Any]:
    """Screenshot the page at `width` and read its layout back; the figures, for the message."""
    page.set_viewport_size({"width": width, "height": 844 if width == PHONE else 900})
    page.wait_for_timeout(50)
    page.screenshot(path=str(ARTIFACTS / f"admin-layout-{name}-{width}.png"), full_page=True)
    layout: dict[str, Any] = page.evaluate(LAYOUT_JS)
    where = f"{name} at {width} px: {layout}"
    assert layout["scrollWidth"] <= layout["clientWidth"], where
    assert layout["escaping"] == [], where
    assert layout["cut"] == [], where
    if width != PHONE:
        assert layout["boxed"] == [], where  # no table scrolls sideways inside its box either
    return layout


def test_admin_browser_run_list_and_run_page_fit_every_width(
    server: str, chromium: Path, operator: User
) -> None:
    runs = sample_runs(operator)
    pages = {
        "runs": reverse("admin:runtime_run_changelist"),
        "run-failed": reverse("admin:runtime_run_change", args=[runs["big"].pk]),
        "run-fanout": reverse("admin:runtime_run_change", args=[runs["fan"].pk]),
        "run-waiting": reverse("admin:runtime_run_change", args=[runs["asleep"].pk]),
    }
    expect = sync_api.expect
    requests: list[str] = []
    ARTIFACTS.mkdir(exist_ok=True)

    with browser_page(chromium, requests) as page:
        log_in(page, server)
        for name, url in pages.items():
            page.goto(server + url)
            for width in (*DESKTOP, PHONE):
                check_layout(page, name, width)
            if name == "runs":
                # The whole id's end on one line, and the steps summary whole in its cell.
                row = page.locator("#result_list tr", has=page.locator(f"text={LONG_TASK}"))
                expect(row).to_have_count(1)
                page.set_viewport_size({"width": 1400, "height": 900})
                for cell in (".field-short_id", "td.field-step_counts"):
                    lines = page.locator(f"#result_list {cell}").evaluate_all(LINES_JS)
                    assert set(lines) == {1}, (cell, lines)
            if name == "run-fanout":
                for width in (*DESKTOP, PHONE):
                    page.set_viewport_size({"width": width, "height": 900})
                    legend = page.evaluate(LEGEND_JS)
                    assert [item["text"] for item in legend][-1] == "retry", legend
                    assert all(item["lines"] == 1 for item in legend), (width, legend)

    assert off_site(requests) == []
