"""Leases name the process that holds them (its liveness key), for fast takeover."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runtime", "0007_stream_chunks"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="lease_owner",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="step",
            name="lease_owner",
            field=models.BigIntegerField(blank=True, editable=False, null=True),
        ),
    ]
