"""The purge's statements: lock a batch of finished runs, delete them with every row of theirs.

Django's collector, which `QuerySet.delete()` goes through, reads each run as a model first
and names every key in each statement: for the retention's 500-run batches that was five
times the Python CPU of the statements below (which send the keys as one array parameter on
PostgreSQL), taken from the same two cores the running workflows need.

Most of what a purge writes is WAL: the first change to a page after a checkpoint logs the
whole page, and a purge changes every page of the history it deletes, about 30 KB a run of
100 events. Every running workflow's commit waits for the WAL before it to reach the disk, so
the purge's transactions compress their page images (`SET LOCAL wal_compression`, lz4 where
the server has it), which halves that volume, where the database role may: a superuser, or
PostgreSQL 15's `GRANT SET ON PARAMETER wal_compression`. Elsewhere they go on uncompressed.

What goes with a run is read from the models, so that a model added later that references
runs is deleted with them: CASCADE references are deleted, SET_NULL ones (forks) cleared,
DO_NOTHING ones left; any other rule, or a cascade that would go further, is an error here
rather than a row left behind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import DatabaseError, connections, models, transaction

from runtime.models import Run
from runtime.store.lifecycle.partitions import PARTITIONED

_DELETE_CHUNK = 500  # keys per statement off PostgreSQL: below SQLite's parameter limit


def finished_runs(rule: models.Q) -> Any:
    """The finished runs a retention rule selects (a RunQuerySet, not yet run)."""
    return Run.objects.finished().filter(rule)


def delete_unlocked(
    runs: models.QuerySet[Run],
    limit: int,
    before: Callable[[list[Any]], object] | None = None,
    history: bool = True,
    order: tuple[str, ...] = ("finished_at", "pk"),
) -> tuple[list[Any], dict[str, int]]:
    """Delete up to `limit` of these runs, oldest finished first, in one short transaction.

    Runs another transaction holds are skipped (SKIP LOCKED) rather than waited for, so a
    purge never holds up a checkpoint; `before(pks)` runs under the locks before anything is
    deleted (an archive). Every write that adds steps or events to a run updates its row in
    the same transaction, so with the rows locked no checkpoint adds rows meanwhile. Returns
    the deleted keys and the rows deleted by model label. `order` is the order the batch
    is taken in: by key where the caller walks a key range (a week's partition).
    """
    locked = runs.select_for_update(skip_locked=True, of=("self",))
    alias = locked.db  # the alias given to using(), else where the router sends writes
    with transaction.atomic(using=alias):
        compress_wal(alias)
        pks = list(locked.order_by(*order).values_list("pk", flat=True)[:limit])
        if pks and before is not None:
            before(pks)
        return pks, delete_runs(alias, pks, history) if pks else {}


# The wal_compression a database's purge transactions set, by alias: "" where the role may not.
_wal_compression: dict[str, str] = {}


def compress_wal(alias: str) -> str:
    """Compress this transaction's WAL page images where the role may; returns the method
    set ("" for none). Asked once per process and database: a refusal is remembered."""
    connection = connections[alias]
    if connection.vendor != "postgresql":
        return ""
    known = _wal_compression.get(alias)
    for method in [known] if known is not None else ["lz4", "on"]:
        if method and _set_local(alias, "wal_compression", method):
            _wal_compression[alias] = method
            return method
    _wal_compression[alias] = ""
    return ""


def _set_local(alias: str, name: str, value: str) -> bool:
    try:
        with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
            cursor.execute(f"SET LOCAL {name} = {value}")
    except DatabaseError:  # not permitted, or not built in (lz4)
        return False
    return True


def delete_runs(alias: str, pks: Sequence[Any], history: bool = True) -> dict[str, int]:
    """Delete the runs `pks`, locked by the caller, with their rows (only the run rows, forks
    cleared, with `history=False`); counts by model label."""
    connection = connections[alias]
    counts: dict[str, int] = {}
    with connection.cursor() as cursor:
        for statement, label in _statements(connection.ops.quote_name, history):
            for placeholder, params in _key_chunks(connection.vendor, pks):
                cursor.execute(statement.format(keys=placeholder), params)
                if label is not None:
                    counts[label] = counts.get(label, 0) + max(cursor.rowcount, 0)
    return {label: n for label, n in counts.items() if n}


def _statements(quote: Callable[[str], str], history: bool = True) -> list[tuple[str, str | None]]:
    """Each table's statement with a `{keys}` slot, and the label its count goes under (None:
    an update, not counted); the run table's own DELETE last."""
    statements: list[tuple[str, str | None]] = []
    for relation in Run._meta.related_objects:
        model, rule = relation.related_model, relation.on_delete
        table, column = quote(model._meta.db_table), quote(str(relation.field.column))
        if rule is models.CASCADE and not history and model in PARTITIONED:
            continue  # its rows go with their week's partition
        if rule is models.CASCADE:
            _refuse_further_cascades(model)
            delete = f"DELETE FROM {table} WHERE {column} {{keys}}"
            statements.append((delete, model._meta.label))
        elif rule is models.SET_NULL:
            clear = f"UPDATE {table} SET {column} = NULL WHERE {column} {{keys}}"
            statements.append((clear, None))
        elif rule is not models.DO_NOTHING:
            raise TypeError(
                f"{model._meta.label}.{relation.field.name}: cannot purge through {rule}"
            )
    run_table, key = quote(Run._meta.db_table), quote(str(Run._meta.pk.column))
    statements.append((f"DELETE FROM {run_table} WHERE {key} {{keys}}", Run._meta.label))
    return statements


def _refuse_further_cascades(model: type[models.Model]) -> None:
    for relation in model._meta.related_objects:
        if relation.on_delete is not models.DO_NOTHING:
            raise TypeError(
                f"{relation.related_model._meta.label} references {model._meta.label} with "
                f"{relation.on_delete}: the purge deletes one level only"
            )


def _key_chunks(vendor: str, pks: Sequence[Any]) -> list[tuple[str, list[Any]]]:
    """`= ANY(%s)` with the keys as one array on PostgreSQL; `IN (%s, ...)` in chunks elsewhere
    (as hex text, the form Django stores UUIDs in on SQLite)."""
    if vendor == "postgresql":
        return [("= ANY(%s)", [list(pks)])]
    texts = [pk.hex for pk in pks]
    return [
        (f"IN ({', '.join(['%s'] * len(chunk))})", chunk)
        for chunk in (texts[i : i + _DELETE_CHUNK] for i in range(0, len(texts), _DELETE_CHUNK))
    ]
