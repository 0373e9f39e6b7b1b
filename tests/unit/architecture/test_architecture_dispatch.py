"""The dispatcher reads no database: what `runtime.dispatch` imports, all the way down.

A run's queue reaches the dispatcher as the routing it is built with (runtime.apps), so an
enqueue never looks a run up itself, and the send path stays a leaf any layer may call.
"""

from __future__ import annotations

import ast

from source_graph import data_access, imports, modules
from test_architecture_layout import DATA_ACCESS_HOMES


def _imported_closure(start: str) -> set[str]:
    found = modules()
    known = set(found)
    seen, todo = {start}, [start]
    while todo:
        name = todo.pop()
        for imp in imports(name, found[name], known):
            if not imp.type_checking and imp.imported not in seen:
                seen.add(imp.imported)
                todo.append(imp.imported)
    return seen


def _imports_django_db(name: str) -> bool:
    tree = ast.parse(modules()[name].read_text())
    return any(
        (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("django.db"))
        or (
            isinstance(node, ast.Import) and any(a.name.startswith("django.db") for a in node.names)
        )
        for node in ast.walk(tree)
    )


def test_architecture_dispatch_imports_nothing_that_reads_the_database() -> None:
    closure = _imported_closure("runtime.dispatch")
    assert "runtime.conf" in closure  # the walk follows imports, or the test proves nothing
    in_homes = sorted(
        name
        for name in closure
        if any(name == home or name.startswith(home + ".") for home in DATA_ACCESS_HOMES)
    )
    assert in_homes == []
    assert sorted(name for name in closure if data_access(modules()[name])) == []
    assert sorted(name for name in closure if _imports_django_db(name)) == []


def test_architecture_the_closure_walk_sees_the_store() -> None:
    # The same walk from a module that does read the database must find the store.
    closure = _imported_closure("runtime.services.starting")
    assert any(name.startswith("runtime.store.") for name in closure)
