"""The detectors behind the layout rules find what they must (on made-up sources)."""

from __future__ import annotations

from pathlib import Path

from source_graph import cycles, data_access, imports, private_reach_ins, sql_literals


def test_architecture_cycles_found_through_any_length() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_architecture_imports_counts_function_level_and_submodules(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from pkg import sub\n"
        "from pkg.sub import name\n"
        "def f():\n"
        "    import pkg.other\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pkg import other\n"
    )
    known = {"pkg", "pkg.sub", "pkg.other", "pkg.m"}
    found = [(i.imported, i.in_function, i.type_checking) for i in imports("pkg.m", source, known)]
    assert found == [
        ("pkg.sub", False, False),
        ("pkg.sub", False, False),
        ("pkg.other", True, False),
        ("pkg.other", False, True),
    ]


def test_architecture_sql_literals_skip_docstrings_and_read_fstrings(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        '"""UPDATE t SET a = 1 is only prose here."""\n'
        "table = 't'\n"
        'q = f"UPDATE {table} SET a = %s WHERE id = %s"\n'
        'r = "SELECT id FROM t"\n'
        's = "update the settings"\n'
    )
    assert [line for line, _ in sql_literals(source)] == [3, 4]


def test_architecture_data_access_finds_managers_connections_and_atomic(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from django.db import connection, models, transaction\n"
        "rows = Run.objects.filter(id=1)\n"
        "with transaction.atomic():\n"
        "    pass\n"
        "other = model._default_manager.all()\n"
        "objects = 'a name that is not an attribute'\n"
        "transaction.on_commit(print)\n"
    )
    assert data_access(source) == [
        (1, "imports connection"),
        (2, ".objects"),
        (3, "transaction.atomic"),
        (5, "._default_manager"),
    ]


def test_architecture_private_reach_ins_found_across_packages_only(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "inner").mkdir(parents=True)
    owner = tmp_path / "pkg" / "inner" / "owner.py"
    owner.write_text(
        "class Context:\n"
        "    def __init__(self):\n"
        "        self._rand = 1\n"
        "    def sibling(self, other):\n"
        "        return other._rand\n"  # the same package: its own name
        "def _helper():\n"
        "    return 1\n"
    )
    user = tmp_path / "pkg" / "user.py"
    user.write_text(
        "from pkg.inner.owner import Context, _helper\n"
        "from django.utils.functional import _lazy_proxy\n"
        "ctx = Context()\n"
        "seed = ctx._rand\n"
        "setattr(ctx, '_rand', 2)\n"
        "object.__setattr__(ctx, '_return_value', 3)\n"
        "meta = ctx._meta\n"
        "self_like = ctx.rand\n"
    )
    found = {"pkg.inner.owner": owner, "pkg.user": user}
    assert private_reach_ins(found, frozenset({"_meta"})) == [
        ("pkg.user", 1, "pkg.inner.owner._helper"),
        ("pkg.user", 2, "django.utils.functional._lazy_proxy"),
        ("pkg.user", 4, "_rand"),
        ("pkg.user", 5, "_rand"),
        ("pkg.user", 6, "_return_value"),
    ]
