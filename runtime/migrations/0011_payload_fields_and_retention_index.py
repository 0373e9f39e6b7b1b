"""Payload columns read back their stored forms (PayloadField); indexes for retention and for
the liveness sweep's running steps on a long history."""

from django.db import migrations, models

import runtime.models.payloads


class Migration(migrations.Migration):
    dependencies = [
        ("runtime", "0010_messages_values_signals"),
    ]

    operations = [
        migrations.AlterField(
            model_name="event",
            name="payload",
            field=runtime.models.payloads.PayloadField(default=dict),
        ),
        migrations.AlterField(
            model_name="run",
            name="error",
            field=runtime.models.payloads.PayloadField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="run",
            name="input",
            field=runtime.models.payloads.PayloadField(default=dict),
        ),
        migrations.AlterField(
            model_name="run",
            name="result",
            field=runtime.models.payloads.PayloadField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="step",
            name="error",
            field=runtime.models.payloads.PayloadField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="step",
            name="input",
            field=runtime.models.payloads.PayloadField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="step",
            name="result",
            field=runtime.models.payloads.PayloadField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="streamchunk",
            name="value",
            field=runtime.models.payloads.PayloadField(null=True),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=models.Q(("status__in", ["completed", "failed", "cancelled"])),
                fields=["finished_at"],
                name="run_finished_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="step",
            index=models.Index(
                condition=models.Q(("lease_owner__isnull", False), ("status", "running")),
                fields=["lease_owner"],
                name="step_running_owner_idx",
            ),
        ),
    ]
