"""`manage.py fanfold mcp --user NAME`: the MCP server (extra `fanfold[mcp]`) over stdio,
acting with that user's rights (an assistant on the operator's machine starts it)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import anyio
from django.core.management.base import CommandError

from runtime.selectors import active_user


def add_parsers(sub: Any) -> list[argparse.ArgumentParser]:
    """Add `mcp` to `fanfold`'s subparsers; returns it."""
    serve = sub.add_parser("mcp", help="serve the MCP tools over stdio as a user")
    serve.add_argument("--user", required=True, metavar="NAME", help="act with this user's rights")
    return [serve]


def actions() -> dict[str, Callable[[dict[str, Any]], None]]:
    """The subcommands by name."""

    def do_mcp(options: dict[str, Any]) -> None:
        user = active_user(options["user"])
        if user is None:
            raise CommandError(f"no active user {options['user']!r}")
        try:
            from api.mcp.server import build
        except ImportError as exc:
            raise CommandError(
                f"the MCP server needs the extra: pip install 'fanfold[mcp]' ({exc})"
            ) from None
        server = build(lambda ctx: user)
        anyio.run(server.run_stdio_async)

    return {"mcp": do_mcp}
