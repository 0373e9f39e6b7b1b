"""The MCP server through the SDK's own client: over streamable HTTP (/api/mcp/, a token) and
over stdio (`manage.py fanfold mcp --user NAME`); refused without a user; each tool under the
caller's rights. The assistant-side test: a failed run found by `customer`, its error read."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import search_flows  # noqa: F401  (registers the workflows)
from django.db import connection
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from rest_framework.authtoken.models import Token

from runtime import start
from runtime.models import Event, Run
from runtime.testing import InMemoryDispatcher
from tests.support.users import starter

ROOT = Path(__file__).resolve().parents[3]
Session = Callable[[ClientSession], Awaitable[Any]]


def result(called: Any) -> Any:
    """A tool call's JSON result (its structured content, else its text)."""
    assert not called.isError, called.content
    if called.structuredContent is not None:
        return called.structuredContent
    return json.loads(called.content[0].text)


async def over_http(url: str, token: str | None, use: Session) -> Any:
    headers = {"Authorization": f"Token {token}"} if token else {}
    async with (
        httpx.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(url, http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await use(session)


async def over_stdio(username: str, use: Session) -> Any:
    db = connection.settings_dict
    env = {**os.environ, "DATABASE_URL": _url(db), "PYTHONPATH": f"{ROOT}:{Path(__file__).parent}",
           "FANFOLD_WORKFLOW_MODULES": "search_flows"}  # fmt: skip
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "fanfold", "mcp", "--user", username],
        env=env, cwd=str(ROOT),
    )  # fmt: skip
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await use(session)


def _url(db: dict[str, Any]) -> str:
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    host, port = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
    return f"postgres://{db['USER']}@{host}:{port}/{db['NAME']}"


@pytest.fixture
def orders(runs: InMemoryDispatcher) -> dict[str, str]:
    """Ada's failed order of customer 42, her completed one, and Eve's failed one of 42."""
    ada, eve = starter("ada-mcp"), starter("eve-mcp")
    failed = start("tests.search.quick", True, owner=ada, search={"customer": 42})
    done = start("tests.search.quick", owner=ada, search={"customer": 42})
    theirs = start("tests.search.quick", True, owner=eve, search={"customer": 42})
    runs.join()
    return {
        "failed": str(failed.id),
        "done": str(done.id),
        "theirs": str(theirs.id),
        "ada": Token.objects.create(user=ada).key,
        "eve": Token.objects.create(user=eve).key,
    }


async def _assistant(session: ClientSession) -> dict[str, Any]:
    """What an assistant does when asked "why did customer 42's order fail?"."""
    tools = {t.name for t in (await session.list_tools()).tools}
    workflows = result(await session.call_tool("list_workflows", {}))["workflows"]
    found = result(
        await session.call_tool("list_runs", {"status": "failed", "search": {"customer": 42}})
    )
    run = result(await session.call_tool("get_run", {"run_id": found["runs"][0]["id"]}))
    history = result(await session.call_tool("run_history", {"run_id": run["id"]}))
    return {"tools": tools, "workflows": workflows, "found": found, "run": run,
            "history": history}  # fmt: skip


def _check_assistant(seen: dict[str, Any], orders: dict[str, str]) -> None:
    assert seen["tools"] == {
        "list_runs", "get_run", "run_history", "list_workflows", "start_run", "cancel_run",
        "send_message", "decide_approval",
    }  # fmt: skip
    quick = [w for w in seen["workflows"] if w["name"] == "tests.search.quick"]
    assert quick[0]["search"]["customer"] == "int"
    assert [r["id"] for r in seen["found"]["runs"]] == [orders["failed"]]  # never Eve's
    assert seen["found"]["runs"][0]["search"] == {"customer": 42}
    assert seen["run"]["status"] == "failed"
    assert seen["run"]["error"]["message"] == "card declined"
    assert seen["run"]["error"]["type"] == "ValueError"
    types = [e["type"] for e in seen["history"]["events"]]
    assert types[0] == "run_created" and types[-1] == "run_failed"
    assert seen["history"]["events"][0]["payload"]["search"] == {"customer": 42}


def test_search_mcp_assistant_finds_a_failed_run_by_customer_over_http(
    live_server: Any, orders: dict[str, str]
) -> None:
    url = f"{live_server.url}/api/mcp/"
    seen = asyncio.run(over_http(url, orders["ada"], _assistant))
    _check_assistant(seen, orders)


def test_search_mcp_assistant_finds_a_failed_run_by_customer_over_stdio(
    orders: dict[str, str],
) -> None:
    seen = asyncio.run(over_stdio("ada-mcp", _assistant))
    _check_assistant(seen, orders)


def test_search_mcp_http_refuses_a_request_without_a_token(
    live_server: Any, orders: dict[str, str]
) -> None:
    url = f"{live_server.url}/api/mcp/"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    assert httpx.post(url, json=body, headers=accept).status_code == 401
    bad = {**accept, "Authorization": "Token not-a-token"}
    assert httpx.post(url, json=body, headers=bad).status_code == 401
    with pytest.raises(BaseException):  # noqa: B017 - the SDK raises its transport's error
        asyncio.run(over_http(url, None, lambda s: s.list_tools()))


def test_search_mcp_stdio_refuses_an_unknown_user(orders: dict[str, str]) -> None:
    with pytest.raises(BaseException):  # noqa: B017 - the server exits before it answers
        asyncio.run(asyncio.wait_for(over_stdio("nobody", lambda s: s.list_tools()), 60))


async def _act(session: ClientSession, orders: dict[str, str]) -> dict[str, Any]:
    order = {"workflow": "tests.search.order", "args": ["o-mcp"], "search": {"customer": 9}}
    started = result(await session.call_tool("start_run", order))
    wrong = await session.call_tool("start_run", {
        "workflow": "tests.search.quick", "search": {"customer": "nine"}})  # fmt: skip
    sent = result(await session.call_tool("send_message", {
        "run_id": started["id"], "topic": "note", "value": {"n": 1}}))  # fmt: skip
    cancelled = result(await session.call_tool("cancel_run", {"run_id": started["id"]}))
    others = await session.call_tool("get_run", {"run_id": orders["failed"]})  # Ada's
    cancel_others = await session.call_tool("cancel_run", {"run_id": orders["done"]})
    bad_filter = await session.call_tool("list_runs", {"search": {"nope": 1}})
    approval = await session.call_tool("decide_approval", {
        "run_id": orders["theirs"], "approval_id": "nope", "approved": True})  # fmt: skip
    return {"started": started, "wrong": wrong, "sent": sent, "cancelled": cancelled,
            "others": others, "cancel_others": cancel_others, "bad_filter": bad_filter,
            "approval": approval}  # fmt: skip


def test_search_mcp_tools_act_as_the_caller_and_are_audited(
    live_server: Any, orders: dict[str, str]
) -> None:
    url = f"{live_server.url}/api/mcp/"
    seen = asyncio.run(over_http(url, orders["eve"], lambda s: _act(s, orders)))
    run = Run.objects.get(id=seen["started"]["id"])
    assert run.owner.username == "eve-mcp" and run.status == "cancelled"
    assert seen["started"]["search"] == {"customer": 9}
    assert seen["wrong"].isError and "must be of type int" in seen["wrong"].content[0].text
    assert seen["sent"]["created"] is True
    cancelled = Event.objects.get(run_id=run.id, type="run_cancelled")
    assert cancelled.payload["by"] == {
        "user_id": run.owner_id, "username": "eve-mcp", "via": "mcp"}  # fmt: skip
    assert seen["others"].isError and "not_found: no run" in seen["others"].content[0].text
    assert seen["cancel_others"].isError  # Ada's run: Eve may not even see it
    assert Run.objects.get(id=orders["done"]).status == "completed"
    assert seen["bad_filter"].isError
    assert "no workflow declares a search attribute 'nope'" in seen["bad_filter"].content[0].text
    assert seen["approval"].isError


def test_search_mcp_list_runs_pages_with_a_cursor(live_server: Any, orders: dict[str, str]) -> None:
    async def pages(session: ClientSession) -> list[Any]:
        first = result(await session.call_tool("list_runs", {"search": {"customer": 42},
                                                              "limit": 1}))  # fmt: skip
        second = result(await session.call_tool("list_runs", {
            "search": {"customer": 42}, "limit": 1, "cursor": first["next_cursor"]}))  # fmt: skip
        return [first, second]

    first, second = asyncio.run(over_http(f"{live_server.url}/api/mcp/", orders["ada"], pages))
    ids = [first["runs"][0]["id"], second["runs"][0]["id"]]
    assert ids == [orders["done"], orders["failed"]]  # never Eve's
    assert second["next_cursor"] is None


def test_search_mcp_list_runs_by_app_version(live_server: Any, orders: dict[str, str]) -> None:
    Run.objects.filter(id__in=[orders["done"], orders["theirs"]]).update(app_version="v-old")

    async def by_version(session: ClientSession) -> Any:
        return result(await session.call_tool("list_runs", {"app_version": "v-old"}))

    found = asyncio.run(over_http(f"{live_server.url}/api/mcp/", orders["ada"], by_version))
    assert [r["id"] for r in found["runs"]] == [orders["done"]]  # never Eve's
