"""`PayloadField`: a JSON column whose stored form is read back as its value.

Payload columns hold what runtime.payloads.packing.pack made of a value (plain, encrypted, or
a reference to the payload storage). Every ORM read of such a column (the admin, the API,
the selectors, `refresh_from_db`) gets the value. Writes are packed by the store's seams, which
know the run a value belongs to (an offloaded file lives in its run's folder); so a model
instance read from the database must not be saved whole again, only by `update_fields` that
leave its payloads out.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models.fields.json import KeyTransform

from runtime.payloads.packing import unpack


class PayloadField(models.JSONField):
    """A JSONField holding a payload's stored form; reads return the value it stands for."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        decoded = super().from_db_value(value, expression, connection)
        if isinstance(expression, KeyTransform):
            return decoded  # a path inside a stored form is not a stored form
        return unpack(decoded)
