"""The layout's rules, checked on the source: one-way imports, SQL only in the store, sizes.

Dependencies point one way: core <- checkpoint <- store <- dispatch/services <- fanout <-
context/executor <- tasks/embedded <- api/admin. An import inside a function hides an edge,
so those count too; the few that must stay are listed here with their reason.
"""

from __future__ import annotations

import ast

from source_graph import (
    ROOT,
    cycles,
    data_access,
    function_lengths,
    imports,
    modules,
    private_reach_ins,
    sql_literals,
    unit_edges,
)

# (module, imported module): why the import cannot move to the module's top.
FUNCTION_IMPORTS_ALLOWED = {
    ("runtime.apps", "runtime.checks"): "AppConfig.ready: registers checks once apps load",
    ("runtime.apps", "runtime.conf"): "AppConfig.ready: settings are read once apps load",
    ("runtime.apps", "runtime.dispatch"): "AppConfig.ready: wires the dispatcher",
    ("runtime.apps", "runtime.embedded"): "AppConfig.ready: the embedded worker hook",
    ("runtime.apps", "runtime.django_tasks"): "AppConfig.ready: the Django Tasks workflow",
    ("runtime.apps", "runtime.versions.routing"): "AppConfig.ready: the version routing",
    ("runtime.apps", "runtime.registry.versions"): "AppConfig.ready: freezes the default version",
    ("runtime.agents", "runtime.agents.durability"): "on first use: the core never imports "
    "pydantic-ai (the agents extra)",
    ("runtime.agents", "runtime.agents.deferred"): "on first use, as runtime.agents.durability",
    ("runtime.agents", "runtime.agents.openai_runner"): "on first use: nor the OpenAI Agents SDK",
    ("runtime.agents", "runtime.agents.approvals"): "on first use: it imports Django's models, "
    "and the package is imported before the apps load",
    ("runtime.agents", "runtime.agents.live"): "on first use, as runtime.agents.approvals",
    ("runtime.management.mcp_serve", "api.mcp.server"): "`fanfold mcp` only: the core never "
    "imports the MCP SDK (the mcp extra)",
    ("api.mcp.http", "api.mcp.server"): "on the first /api/mcp/ request: the API loads without "
    "the MCP SDK (the mcp extra)",
    ("runtime.pytest_plugin", "runtime.testing.environment"): "pytest loads its plugins "
    "before Django's apps, which the test kit needs: imported when a fixture runs",
    ("runtime.testing.agents", "runtime.testing.agents.pydantic_ai"): "on first use: the "
    "test kit imports pydantic-ai only for its scripted model (the agents extra)",
    ("runtime.testing.agents", "runtime.testing.agents.openai_agents"): "on first use: nor "
    "the OpenAI Agents SDK",
}
# Pairs of runtime's units (a subpackage, or a top-level module) that may import each other:
# why the two cannot be one unit or be layered. Longer cycles are never allowed.
UNIT_CYCLES_ALLOWED: dict[frozenset[str], str] = {}
MAX_TOP_LEVEL_MODULES = 20

# Where the runtime may reach the database itself: the store, the models (managers and
# querysets), the admin (Django's ModelAdmin works on querysets) and the read-side selectors.
DATA_ACCESS_HOMES = ("runtime.store", "runtime.models", "runtime.admin", "runtime.selectors")
# Modules outside those homes that touch Django's database objects, and why.
DATA_ACCESS_ALLOWED = {
    "runtime.access.permissions": "narrows a QuerySet the API or admin passes (a selector's "
    "filter); its default is every run",
    "runtime.process.background": "closes its thread's connection after each pass "
    "(connection lifecycle, no query)",
    "runtime.fanout.async_branches": "closes the reporter thread's connections when it "
    "stops (connection lifecycle, no query)",
    "runtime.services.starting": "the service owns the start's transaction (STYLE.md: "
    "services own transactions; the store's insert runs inside it)",
}
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 60


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    found = modules()
    known = set(found)
    edges: dict[str, set[str]] = {name: set() for name in found}
    unexpected: list[str] = []
    for name, path in found.items():
        for imp in imports(name, path, known):
            if imp.type_checking:
                continue  # never executed
            edges[name].add(imp.imported)
            if imp.in_function and (name, imp.imported) not in FUNCTION_IMPORTS_ALLOWED:
                unexpected.append(f"{path.relative_to(ROOT)}:{imp.line} imports {imp.imported}")
    return edges, unexpected


def test_architecture_import_graph_has_no_cycle() -> None:
    edges, _ = _graph()
    assert cycles(edges) == []


def test_architecture_units_import_each_other_at_most_in_listed_pairs() -> None:
    edges, _ = _graph()
    found = cycles(unit_edges(edges))
    assert [c for c in found if len(c) > 2] == []
    assert [c for c in found if frozenset(c) not in UNIT_CYCLES_ALLOWED] == []


def test_architecture_runtime_keeps_few_top_level_modules() -> None:
    top = sorted(path.name for path in (ROOT / "runtime").glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_architecture_only_the_body_runner_makes_a_step_current() -> None:
    # `running(StepInfo)` brackets every call of a step body: only the body runner may use it.
    users = sorted(
        name
        for name, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom)
        and node.module == "runtime.core.current"
        and any(alias.name == "running" for alias in node.names)
    )
    assert users == ["runtime.durable.body"]


def test_architecture_function_level_imports_are_only_the_listed_ones() -> None:
    _, unexpected = _graph()
    assert unexpected == []


def test_architecture_listed_function_level_imports_still_exist() -> None:
    found = modules()
    known = set(found)
    present = {
        (imp.importer, imp.imported)
        for name, path in found.items()
        for imp in imports(name, path, known)
        if imp.in_function
    }
    assert set(FUNCTION_IMPORTS_ALLOWED) <= present  # a stale entry would hide a new one


def test_architecture_sql_text_only_in_the_store() -> None:
    outside = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for name, path in modules().items()
        if not (name == "runtime.store" or name.startswith("runtime.store."))
        for line, text in sql_literals(path)
    ]
    assert outside == []


def test_architecture_the_store_holds_sql() -> None:
    # The detector must see the store's statements, or the test above proves nothing.
    store = [path for name, path in modules().items() if name.startswith("runtime.store.")]
    assert sum(len(sql_literals(path)) for path in store) >= 10


# The store's own seams, shared by every subject: its connections, past-the-pooler sessions,
# the read replica's connections (where reads that may lag go), portable SQL pieces and the
# raw cursor its hot statements go through. Everything else lives in a subpackage named after
# what it stores.
STORE_ROOT_MODULES = {
    "runtime.store",
    "runtime.store.connection",
    "runtime.store.raw_statements",
    "runtime.store.direct",
    "runtime.store.replica",
    "runtime.store.dialect",
}
STORE_SUBJECTS = {"runs", "history", "fanout", "messaging", "flow", "lifecycle"}


def test_architecture_store_is_grouped_by_subject() -> None:
    flat = sorted(
        name
        for name in modules()
        if name.startswith("runtime.store.")
        and name.count(".") == 2
        and name not in STORE_ROOT_MODULES
        and name.rsplit(".", 1)[1] not in STORE_SUBJECTS
    )
    assert flat == []
    grouped = {
        name.split(".")[2]
        for name in modules()
        if name.count(".") >= 3 and name.startswith("runtime.store.")
    }
    assert grouped == STORE_SUBJECTS


def test_architecture_modules_and_functions_stay_small() -> None:
    too_big = []
    for name, path in modules().items():
        lines = len(path.read_text().splitlines())
        if lines > MAX_MODULE_LINES:
            too_big.append(f"{name}: {lines} lines")
        too_big += [
            f"{name}.{function}: {length} lines"
            for function, length in function_lengths(path)
            if length > MAX_FUNCTION_LINES
        ]
    assert too_big == []


def _data_access_outside_the_boundary() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, path in modules().items():
        if not name.startswith("runtime.") or any(
            name == home or name.startswith(home + ".") for home in DATA_ACCESS_HOMES
        ):
            continue
        hits = [f"{path.relative_to(ROOT)}:{line}: {what}" for line, what in data_access(path)]
        if hits:
            found[name] = hits
    return found


def test_architecture_database_access_only_inside_the_boundary() -> None:
    outside = _data_access_outside_the_boundary()
    assert {n: h for n, h in outside.items() if n not in DATA_ACCESS_ALLOWED} == {}


def test_architecture_listed_database_access_exceptions_still_exist() -> None:
    # A stale entry would let new data access in unnoticed.
    assert set(DATA_ACCESS_ALLOWED) <= set(_data_access_outside_the_boundary())


# Private-looking names that libraries document for use: Django's model options, managers and
# instance state; Celery's proxy unwrapping; the OpenAI SDK's response request id.
FRAMEWORK_PRIVATE_NAMES = frozenset(
    {"_meta", "_default_manager", "_base_manager", "_state", "_get_current_object", "_request_id"}
)
# (module, private name it reaches into elsewhere): why it must.
PRIVATE_REACH_INS_ALLOWED = {
    ("runtime.django_tasks.compat", "_return_value"): "Django's TaskResult offers no public "
    "way to set a return value; the one write, pinned to the supported Django releases by "
    "tests/unit/tasks_backend/test_tasks_backend_compat.py",
}


def test_architecture_no_private_name_is_used_across_packages() -> None:
    found = private_reach_ins(modules(), FRAMEWORK_PRIVATE_NAMES)
    unexpected = [hit for hit in found if hit[::2] not in PRIVATE_REACH_INS_ALLOWED]
    assert unexpected == []


def test_architecture_listed_private_reach_ins_still_exist() -> None:
    found = {hit[::2] for hit in private_reach_ins(modules(), FRAMEWORK_PRIVATE_NAMES)}
    assert set(PRIVATE_REACH_INS_ALLOWED) <= found  # a stale entry would hide a new one
