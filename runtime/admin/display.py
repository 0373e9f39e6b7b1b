"""What the run admin shows: values formatted for its pages (JSON, durations, times, links)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

# A payload is at most FANFOLD_MAX_PAYLOAD_BYTES; past this many characters the page shows a
# prefix rather than a megabyte of JSON.
PRETTY_JSON_LIMIT = 20_000
EVENT_PAYLOAD_LIMIT = 200


def pretty_json(value: Any, limit: int = PRETTY_JSON_LIMIT) -> str:
    """`value` as indented JSON, cut to `limit` characters with a note saying so."""
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    if len(text) > limit:
        return f"{text[:limit]}\n… ({len(text) - limit} more characters)"
    return text


def compact_json(payload: Any) -> str:
    """`payload` as one line of JSON, cut to `EVENT_PAYLOAD_LIMIT` characters and an ellipsis."""
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    if len(text) > EVENT_PAYLOAD_LIMIT:
        return text[:EVENT_PAYLOAD_LIMIT] + "…"
    return text


def seconds_between(start: datetime | None, end: datetime | None) -> str:
    """The time from `start` to `end` in seconds, e.g. "0.012 s"; a dash if either is None."""
    if start is None or end is None:
        return "—"
    return f"{(end - start).total_seconds():.3f} s"


def relative_time(origin: datetime, moment: datetime) -> str:
    """`moment` as an offset from `origin`, e.g. "+0.012 s"."""
    return f"{(moment - origin).total_seconds():+.3f} s"


def timestamp(moment: datetime | None) -> str:
    """Compact and to the second, in the current time zone: a list of runs is read for order."""
    return "—" if moment is None else timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S")


def runs_phrase(n: int) -> str:
    """The phrase "1 run" or "`n` runs", for the actions' messages."""
    return f"{n} run" if n == 1 else f"{n} runs"


def error_summary(error: Any) -> str:
    """A recorded error in one line, "Type: message"; an empty string for no error."""
    if not error:
        return ""
    if isinstance(error, dict):
        return f"{error.get('type', 'Error')}: {error.get('message', '')}"
    return str(error)


def run_link(run_id: Any) -> SafeString:
    """A link to the run's admin page, its text the run's id."""
    url = reverse("admin:runtime_run_change", args=[run_id])
    return format_html("<a href='{}'>{}</a>", url, run_id)


def breakable_name(name: str) -> SafeString:
    """A dotted name that a narrow column wraps after a dot, never inside a word."""
    return mark_safe(".<wbr>".join(escape(part) for part in name.split(".")))
