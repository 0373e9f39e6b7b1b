"""`python manage.py startrun NAME [--args JSON] [--kwargs JSON] [--idempotency-key K]
[--search JSON] [--wait]`."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runtime import embedded
from runtime.core.errors import FanfoldError, RunCancelled, RunFailed
from runtime.handles import start


def _json_arg(raw: str, kind: type, flag: str) -> Any:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CommandError(f"{flag} is not valid JSON: {exc}") from None
    if not isinstance(value, kind):
        raise CommandError(f"{flag} must be a JSON {'array' if kind is list else 'object'}")
    return value


class Command(BaseCommand):
    help = "Start a workflow run and print its id (and, with --wait, its result)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the registered workflow name")
        parser.add_argument(
            "--args", dest="wf_args", default="[]", help="positional arguments, a JSON array"
        )
        parser.add_argument(
            "--kwargs", dest="wf_kwargs", default="{}", help="keyword arguments, a JSON object"
        )
        parser.add_argument("--idempotency-key", default=None)
        parser.add_argument(
            "--search", default=None, help='search attributes, a JSON object: {"customer": 42}'
        )
        parser.add_argument("--wait", action="store_true", help="wait for the result")
        parser.add_argument("--timeout", type=float, default=None, help="seconds to --wait")

    def handle(self, *args: Any, **options: Any) -> None:
        wf_args = _json_arg(options["wf_args"], list, "--args")
        wf_kwargs = _json_arg(options["wf_kwargs"], dict, "--kwargs")
        search = (
            None if options["search"] is None else _json_arg(options["search"], dict, "--search")
        )
        try:
            handle = start(options["name"], *wf_args, idempotency_key=options["idempotency_key"],
                           search=search, **wf_kwargs)  # fmt: skip
        except (FanfoldError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        verb = "started" if handle.created else "exists (same idempotency key)"
        self.stdout.write(f"run {handle.id} {verb}")
        if not options["wait"]:
            if embedded.is_embedded():
                self.stdout.write("note: the embedded worker lives in this process; use --wait")
            return
        try:
            result = handle.wait(timeout=options["timeout"])
        except (RunFailed, RunCancelled, TimeoutError) as exc:
            raise CommandError(str(exc)) from None
        finally:
            embedded.stop_worker()
        self.stdout.write(json.dumps({"status": "completed", "result": result}))
