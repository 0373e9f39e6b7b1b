"""The shipped packages read as source: modules, their imports, SQL literals, sizes.

Pure `ast` over the files, nothing is imported or run. An import names the module it loads:
`from a.b import c` is `a.b.c` when that is a module of the tree, else `a.b`; parent packages
executed along the way are not counted as edges (as import-linter counts them).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("runtime", "publisher", "api")

SQL = re.compile(
    r"\bSELECT\b[\s\S]*\bFROM\b|\bINSERT\s+INTO\b|\bUPDATE\b[\s\S]*\bSET\b|\bDELETE\s+FROM\b"
    r"|\b(?:CREATE|DROP|ALTER)\s+(?:TABLE|INDEX)\b"
)


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    in_function: bool
    type_checking: bool


def modules() -> dict[str, Path]:
    """Every module of the shipped packages by dotted name (migrations left out)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts:
                continue
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> list[Import]:
    """The imports of one module that name modules of the tree."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []
    for node, in_function, type_checking in _walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.append(sub if sub in known else base)
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.append(Import(name, target, node.lineno, in_function, type_checking))
    return found


def _walk(tree: ast.AST) -> Iterator[tuple[ast.AST, bool, bool]]:
    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> Iterator[Any]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, in_function, type_checking
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            guarded = type_checking or (
                isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
            )
            yield from visit(child, inner, guarded)

    yield from visit(tree, False, False)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return found


def sql_literals(path: Path) -> list[tuple[int, str]]:
    """String literals (f-strings included, docstrings not) that read as SQL statements."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {
        id(body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and (body := node.body)
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
    }
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = None if id(node) in docstrings else node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        if text and SQL.search(text):
            found.append((node.lineno, text[:60]))
    return found


def function_lengths(path: Path) -> list[tuple[str, int]]:
    """Each function's name and length in lines, decorators and docstring included."""
    tree = ast.parse(path.read_text(), str(path))
    return [
        (node.name, (node.end_lineno or node.lineno) - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def unit_of(module: str) -> str | None:
    """The runtime unit a module belongs to: its subpackage of `runtime`, or itself for a
    top-level module; None outside `runtime` and for the package's `__init__`."""
    parts = module.split(".")
    if parts[0] != "runtime" or len(parts) < 2:
        return None
    return ".".join(parts[:2])


def unit_edges(module_edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph between runtime's units (self-imports left out)."""
    edges: dict[str, set[str]] = {}
    for importer, imported in module_edges.items():
        source = unit_of(importer)
        if source is None:
            continue
        targets = edges.setdefault(source, set())
        for name in imported:
            target = unit_of(name)
            if target is not None and target != source:
                targets.add(target)
    return edges


DATA_ACCESS_NAMES = frozenset({"connection", "connections"})
DATA_ACCESS_ATTRIBUTES = frozenset({"objects", "_default_manager", "_base_manager"})


def data_access(path: Path) -> list[tuple[int, str]]:
    """Where a module reaches the database itself: a model manager (`X.objects`), Django's
    `connection(s)` imported from `django.db`, or `transaction.atomic`."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("django.db"):
            found += [
                (node.lineno, f"imports {alias.name}")
                for alias in node.names
                if alias.name in DATA_ACCESS_NAMES
            ]
        elif isinstance(node, ast.Attribute):
            if node.attr in DATA_ACCESS_ATTRIBUTES:
                found.append((node.lineno, f".{node.attr}"))
            elif node.attr == "atomic" and ast.unparse(node.value).endswith("transaction"):
                found.append((node.lineno, "transaction.atomic"))
    return found


ATTRIBUTE_CALLS = frozenset({"getattr", "setattr", "delattr", "hasattr", "__setattr__"})


def package_unit(module: str) -> str:
    """A module's package for the private-name rule: the first two parts of its name
    (`runtime.durable`, `api.views`), a top-level module of a package being its own."""
    return ".".join(module.split(".")[:2])


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_definitions(path: Path) -> set[str]:
    """The private names a module defines: its functions, classes, module and class
    attributes, and what its code assigns to `self.` (or `cls.`)."""
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            found.add(node.attr)
    return {name for name in found if _is_private(name)}


def private_uses(path: Path) -> list[tuple[int, str, str | None]]:
    """Where a module uses a private name of something other than `self`/`cls`: an attribute
    (`x._name`, or by string through getattr/setattr/`object.__setattr__`), with None; or a
    private name imported from a module, with that module's name."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append((node.lineno, node.attr, None))
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found += [
                (node.lineno, alias.name, node.module or "")
                for alias in node.names
                if _is_private(alias.name)
            ]
        elif isinstance(node, ast.Call) and len(node.args) >= 2:
            callee = node.func
            name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
            key = node.args[1]
            if (
                name in ATTRIBUTE_CALLS
                and isinstance(key, ast.Constant)
                and isinstance(key.value, str)
                and _is_private(key.value)
            ):
                found.append((node.lineno, key.value, None))
    return found


def private_reach_ins(
    found: dict[str, Path], allowed_names: frozenset[str]
) -> list[tuple[str, int, str]]:
    """Uses of a private name across packages, as (module, line, what): an attribute whose
    name no module of the user's package defines, or an import of a private name from another
    package's module (or a library's). `allowed_names` are frameworks' documented
    private-looking attributes (Django's `_meta`)."""
    defined: dict[str, set[str]] = {}
    for name, path in found.items():
        defined.setdefault(package_unit(name), set()).update(private_definitions(path))
    hits: list[tuple[str, int, str]] = []
    for name, path in found.items():
        unit = package_unit(name)
        for line, private, source in private_uses(path):
            if source is None:
                if private in defined[unit] or private in allowed_names:
                    continue
            elif source in found and package_unit(source) == unit:
                continue
            hits.append((name, line, private if source is None else f"{source}.{private}"))
    return hits
