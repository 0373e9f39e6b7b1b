"""The MCP server on the official SDK (`mcp`, the `fanfold[mcp]` extra): the tools of
api.mcp.tools, each run in a worker thread (the ORM is synchronous) as the calling user.

`build(user_of)` makes a server whose tools ask `user_of(ctx)` who calls: the user given to
`manage.py fanfold mcp --user NAME` over stdio, the API-authenticated user of the HTTP request
over `/api/mcp/` (api.mcp.http puts it in the request's ASGI scope).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from django.db import close_old_connections
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings

from api.mcp import tools
from runtime.core.errors import FanfoldError

UserOf = Callable[[Context[Any, Any, Any]], Any]
USER_SCOPE_KEY = "fanfold.user"  # the ASGI scope's key of the HTTP request's user
INSTRUCTIONS = (
    "Fanfold runs durable workflows. Find runs by workflow, status, time and the business "
    "keys their workflows declare as search attributes (list_workflows shows them), then read "
    "a run (get_run: its error or result) and its history (run_history). You act with the "
    "rights of the user you connected as; what you change is recorded under their name."
)


def _in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    close_old_connections()
    try:
        return fn(*args, **kwargs)
    finally:
        close_old_connections()


async def _call(user_of: UserOf, ctx: Context[Any, Any, Any], fn: Callable[..., Any],
                **kwargs: Any) -> Any:  # fmt: skip
    user = user_of(ctx)
    try:
        job = functools.partial(_in_thread, fn, user, **kwargs)
        return await anyio.to_thread.run_sync(job)
    except FanfoldError as exc:
        raise ToolError(f"{exc.code}: {exc}") from None
    except ValueError as exc:  # a run id that is no run id, a value that is not JSON
        raise ToolError(f"invalid: {exc}") from None


def build(user_of: UserOf) -> FastMCP:
    """A Fanfold MCP server whose tools act as `user_of(ctx)`."""
    server = FastMCP(
        "fanfold",
        instructions=INSTRUCTIONS,
        stateless_http=True,
        json_response=True,
        streamable_http_path="/",
        # Django checks the Host header (ALLOWED_HOSTS) before the request gets here.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    call = functools.partial(_call, user_of)
    _reading_tools(server, call)
    _changing_tools(server, call)
    return server


Call = Callable[..., Any]


def _reading_tools(server: FastMCP, call: Call) -> None:
    @server.tool()
    async def list_runs(
        ctx: Context[Any, Any, Any],
        workflow: str | None = None,
        status: str | None = None,
        search: dict[str, Any] | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
        finished_after: str | None = None,
        finished_before: str | None = None,
        parent: str | None = None,
        forked_from: str | None = None,
        task: str | None = None,
        app_version: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """Runs you may see, newest first. `status`: one or several, comma-separated
        (pending, running, waiting, completed, failed, cancelled). `search`: search attribute
        filters, {"customer": 42, "amount__gte": 100, "region__in": "eu,us",
        "region__contains": "eu"}. `task`: a plain Django task's dotted path (its runs);
        `app_version`: a deployment version. Times are ISO 8601. Each run comes with its search
        attributes and error; pass `next_cursor` back as `cursor` for the next page."""
        times = {"created_after": created_after, "created_before": created_before,
                 "finished_after": finished_after, "finished_before": finished_before}  # fmt: skip
        return dict(await call(ctx, tools.list_runs, workflow=workflow, status=status,
                               search=search, parent=parent, forked_from=forked_from,
                               task=task, app_version=app_version, limit=limit,
                               cursor=cursor, **times))  # fmt: skip

    @server.tool()
    async def get_run(ctx: Context[Any, Any, Any], run_id: str) -> dict[str, Any]:
        """One run: status, input, result or error, search attributes, step counts."""
        return dict(await call(ctx, tools.get_run, run_id=run_id))

    @server.tool()
    async def run_history(
        ctx: Context[Any, Any, Any], run_id: str, after: int = 0, limit: int = 50
    ) -> dict[str, Any]:
        """A run's steps and its events after seq `after` (`limit` of them, payloads
        included); `next_after` pages on."""
        return dict(await call(ctx, tools.run_history, run_id=run_id, after=after, limit=limit))

    @server.tool()
    async def list_workflows(ctx: Context[Any, Any, Any]) -> dict[str, Any]:
        """The registered workflows: parameters, schedule and search attributes (with types)."""
        return {"workflows": await call(ctx, tools.list_workflows)}


def _changing_tools(server: FastMCP, call: Call) -> None:
    @server.tool()
    async def start_run(
        ctx: Context[Any, Any, Any],
        workflow: str,
        args: list[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        search: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Start a run of `workflow` as you (you own it); `search` sets its attributes."""
        return dict(await call(ctx, tools.start, workflow=workflow, args=args, kwargs=kwargs,
                               idempotency_key=idempotency_key, search=search))  # fmt: skip

    @server.tool()
    async def cancel_run(ctx: Context[Any, Any, Any], run_id: str) -> dict[str, Any]:
        """Cancel a run that has not finished (recorded with your name)."""
        return dict(await call(ctx, tools.cancel, run_id=run_id))

    @server.tool()
    async def send_message(
        ctx: Context[Any, Any, Any],
        run_id: str,
        topic: str,
        value: Any = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Send a JSON value to a run's mailbox under `topic` (what `ctx.recv(topic)` takes)."""
        return dict(await call(ctx, tools.send, run_id=run_id, topic=topic, value=value,
                               idempotency_key=idempotency_key))  # fmt: skip

    @server.tool()
    async def decide_approval(
        ctx: Context[Any, Any, Any],
        run_id: str,
        approval_id: str,
        approved: bool,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Approve or deny an agent's tool call that waits for a person, once."""
        decision = {"approval_id": approval_id, "approved": approved, "reason": reason}
        return dict(await call(ctx, tools.decide_approval, run_id=run_id, **decision))


def request_user(ctx: Context[Any, Any, Any]) -> Any:
    """The user of the HTTP request the tool call came in (api.mcp.http put it there)."""
    request = ctx.request_context.request
    user = request.scope.get(USER_SCOPE_KEY) if request is not None else None
    if user is None:
        raise ToolError("not_authenticated: no user for this request")
    return user
