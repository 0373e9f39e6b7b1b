"""PostgreSQL only: the search attribute indexes with the columns their queries read."""

from django.db import migrations

# On PostgreSQL the attribute indexes cover what their queries read (docs/design/search.md):
# a value range yields run ids from the index alone, and the probe of one run's attribute
# (the newest-first walk's) compares the value without a visit to the table. SQLite has no
# INCLUDE: its indexes stay as the model declares them (same names, same key columns).
_COVERING = [
    "DROP INDEX search_num_idx",
    "CREATE INDEX search_num_idx ON runtime_searchattribute (name, num) INCLUDE (run_id) "
    "WHERE num IS NOT NULL",
    "DROP INDEX search_text_idx",
    "CREATE INDEX search_text_idx ON runtime_searchattribute (name, text) INCLUDE (run_id) "
    "WHERE text IS NOT NULL",
    "DROP INDEX search_at_idx",
    "CREATE INDEX search_at_idx ON runtime_searchattribute (name, at) INCLUDE (run_id) "
    "WHERE at IS NOT NULL",
    "ALTER TABLE runtime_searchattribute DROP CONSTRAINT search_run_name_uniq",
    "ALTER TABLE runtime_searchattribute ADD CONSTRAINT search_run_name_uniq "
    "UNIQUE (run_id, name) INCLUDE (num, text, at)",
]


def covering_indexes(apps: object, schema_editor: object) -> None:
    connection = schema_editor.connection  # type: ignore[attr-defined]
    if connection.vendor == "postgresql":
        for statement in _COVERING:
            schema_editor.execute(statement)  # type: ignore[attr-defined]


class Migration(migrations.Migration):
    dependencies = [
        ("runtime", "0019_search_attributes"),
    ]

    operations = [
        migrations.RunPython(covering_indexes, migrations.RunPython.noop),
    ]
