"""PostgreSQL: the per-run tables become partitioned by run id range (docs/design/history.md).

Each table is converted in place: renamed aside, a partitioned table of the same columns takes
its name, with its DEFAULT partition and the partitions of this week and the next ones, the
rows are copied in and the old table dropped. Keys that must include the partition key get
`run_id` added (the primary keys become (id, run_id)); ids keep their sequences. It copies the
whole history, so it runs with the workers and web processes stopped (see the upgrade notes in
docs/design/history.md). SQLite keeps its plain tables: nothing happens there.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import migrations, models
from django.utils import timezone

import runtime.core.run_ids

TABLES = (
    "runtime_step",
    "runtime_event",
    "runtime_fanoutgroup",
    "runtime_streamchunk",
    "runtime_message",
    "runtime_runvalue",
    "runtime_signalwait",
)
_MODELS = ("step", "event", "fanoutgroup", "streamchunk", "message", "runvalue", "signalwait")


def _fetch(cursor: Any, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    cursor.execute(sql, params or [])
    return list(cursor.fetchall())


def _with_run_id(columns: str) -> str:
    """A unique key's column list with run_id, which a partitioned table's keys need."""
    names = [c.strip() for c in columns.split(",")]
    return columns if "run_id" in names else f"{columns}, run_id"


def _partition(cursor: Any, table: str) -> None:
    old = f"{table}_unpartitioned"
    constraints = _fetch(
        cursor,
        "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = %s::regclass AND contype IN ('p', 'u', 'c', 'f') ORDER BY conname",
        [table],
    )
    indexes = _fetch(
        cursor,
        "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = %s::regclass "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid) "
        "ORDER BY 1",
        [table],
    )
    identity = _fetch(
        cursor,
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attidentity <> ''",
        [table],
    )
    cursor.execute(f"ALTER TABLE {table} RENAME TO {old}")
    for name, _, _ in constraints:
        cursor.execute(f"ALTER TABLE {old} DROP CONSTRAINT {name}")
    for name, _ in indexes:
        cursor.execute(f"DROP INDEX {name}")
    for (column,) in identity:
        cursor.execute(f"ALTER TABLE {old} ALTER {column} DROP IDENTITY")
    cursor.execute(
        f"CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS INCLUDING STORAGE) "
        "PARTITION BY RANGE (run_id)"
    )
    for (column,) in identity:  # identity columns on partitioned tables came in PostgreSQL 17
        sequence = f"{table}_{column}_seq"
        cursor.execute(f"CREATE SEQUENCE {sequence} OWNED BY {table}.{column}")
        cursor.execute(f"ALTER TABLE {table} ALTER {column} SET DEFAULT nextval('{sequence}')")
        cursor.execute(
            f"SELECT setval('{sequence}', COALESCE((SELECT max({column}) FROM {old}), 0) + 1, "
            "false)"
        )
    for name, kind, definition in constraints:
        if kind == "p":
            definition = "PRIMARY KEY (" + _with_run_id(definition[len("PRIMARY KEY (") : -1]) + ")"
        elif kind == "u":
            definition = "UNIQUE (" + _with_run_id(definition[len("UNIQUE (") : -1]) + ")"
        cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}")
    for _, definition in indexes:
        if definition.startswith("CREATE UNIQUE INDEX"):
            head, columns, tail = re.match(r"(.*? USING \w+ \()(.*?)(\).*)", definition).groups()  # type: ignore[union-attr]
            definition = head + _with_run_id(columns) + tail
        cursor.execute(definition)
    cursor.execute(f"CREATE TABLE {table}_rest PARTITION OF {table} DEFAULT")


def _copy_in(cursor: Any, table: str) -> None:
    old = f"{table}_unpartitioned"
    cursor.execute(f"INSERT INTO {table} SELECT * FROM {old}")
    cursor.execute(f"DROP TABLE {old}")


def partition_history(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    from runtime.store.lifecycle.partitions import create_partitions, upcoming

    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for table in TABLES:
            _partition(cursor, table)
    for period in upcoming(timezone.now()):
        create_partitions(connection, period)
    with connection.cursor() as cursor:
        for table in TABLES:
            _copy_in(cursor, table)
            cursor.execute(f"ANALYZE {table}")


def unpartition_history(apps: Any, schema_editor: Any) -> None:
    """Back to plain tables, as the previous migration's models make them."""
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for table, model_name in zip(TABLES, _MODELS, strict=True):
            model = apps.get_model("runtime", model_name)
            cursor.execute(f"ALTER TABLE {table} RENAME TO {table}_partitioned")
            for (name,) in _fetch(
                cursor,
                "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass "
                "AND contype IN ('p', 'u', 'c', 'f')",
                [f"{table}_partitioned"],
            ):
                cursor.execute(f"ALTER TABLE {table}_partitioned DROP CONSTRAINT {name}")
            for (name,) in _fetch(
                cursor,
                "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE i.indrelid = %s::regclass",
                [f"{table}_partitioned"],
            ):
                cursor.execute(f"DROP INDEX {name}")
            schema_editor.create_model(model)
            columns = ", ".join(f.column for f in model._meta.concrete_fields)
            cursor.execute(
                f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {table}_partitioned"
            )
            cursor.execute(f"DROP TABLE {table}_partitioned CASCADE")
            if isinstance(model._meta.pk, models.AutoField | models.BigAutoField):
                cursor.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"COALESCE((SELECT max(id) FROM {table}), 0) + 1, false)"
                )


class Migration(migrations.Migration):
    # Each table's conversion and copy is DDL plus data: one transaction, all or nothing.
    atomic = True

    dependencies = [
        ("runtime", "0014_approval_events"),
    ]

    operations = [
        migrations.AlterField(
            model_name="run",
            name="id",
            field=models.UUIDField(
                default=runtime.core.run_ids.new_run_id,
                editable=False,
                primary_key=True,
                serialize=False,
            ),
        ),
        migrations.AlterField(
            model_name="fanoutgroup",
            name="run",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=models.deletion.CASCADE,
                related_name="fanout_groups",
                to="runtime.run",
            ),
        ),
        migrations.RunPython(partition_history, unpartition_history, elidable=False),
    ]
