"""Runs get owners; idempotency keys become unique per owner and workflow; callback tokens are
stored as their SHA-256 (existing tokens are hashed here: the tokens handed out keep working,
but a replay can no longer recompute `.token` for those callbacks)."""

from __future__ import annotations

import hashlib
from typing import Any

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

_BATCH = 500


def _is_digest(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def hash_callback_tokens(apps: Any, schema_editor: Any) -> None:
    """Replace every stored callback token by its SHA-256 (hex), in batches."""
    step = apps.get_model("runtime", "Step")
    rows = step.objects.using(schema_editor.connection.alias).filter(callback_token__isnull=False)
    last = None
    while True:
        page = rows.order_by("id")
        if last is not None:
            page = page.filter(id__gt=last)
        batch = list(page.values_list("id", "callback_token")[:_BATCH])
        if not batch:
            return
        for step_id, token in batch:
            if not _is_digest(token):
                digest = hashlib.sha256(token.encode()).hexdigest()
                rows.filter(id=step_id).update(callback_token=digest)
        last = batch[-1][0]


class Migration(migrations.Migration):
    dependencies = [
        ("runtime", "0008_lease_owners"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="owner",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="fanfold_runs",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="run",
            name="idempotency_key",
            field=models.CharField(blank=True, db_index=True, max_length=255, null=True),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=models.Q(("owner__isnull", False)),
                fields=["owner", "-created_at", "-id"],
                name="run_owner_newest_idx",
            ),
        ),
        migrations.AddConstraint(
            model_name="run",
            constraint=models.UniqueConstraint(
                condition=models.Q(("idempotency_key__isnull", False), ("owner__isnull", False)),
                fields=("owner", "workflow", "idempotency_key"),
                name="run_unique_owner_key",
            ),
        ),
        migrations.AddConstraint(
            model_name="run",
            constraint=models.UniqueConstraint(
                condition=models.Q(("idempotency_key__isnull", False), ("owner__isnull", True)),
                fields=("workflow", "idempotency_key"),
                name="run_unique_ownerless_key",
            ),
        ),
        migrations.RunPython(hash_callback_tokens, migrations.RunPython.noop, elidable=False),
    ]
