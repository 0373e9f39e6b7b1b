"""Search attributes (runtime.core.search): a run's business keys, one row per attribute.

A side table rather than a JSON column on Run: each value sits in a typed column (`num` for
int, float and bool, `text`, `at`) under a B-tree on (name, value), so equality and range
queries on any declared attribute use an index without an index per attribute name
(docs/design/search.md says why). Rows reference their run without a database constraint and
go with it (RunQuerySet.delete cascades through the ORM).

On PostgreSQL a start writes its attributes as one `SearchPending` row instead, moved into
`SearchAttribute` rows by the workers' drain (runtime.store.runs.search_pending): the start
pays for one small heap row and one append to a primary key rather than three rows and
their random-keyed index entries (docs/design/search.md, "The pending list").
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from runtime.core.search import MAX_TEXT


# Declared before SearchAttribute on purpose: Run's related objects follow the order models
# are defined, and the purge (runtime.store.lifecycle.purge) deletes in that order. A drain
# that moves a run's pending row while the purge deletes the run must be waited for before
# the purge deletes the attribute rows, or the rows it inserts would outlive their run.
class SearchPending(models.Model):
    """A run's start attributes not yet indexed: {name: {"kind": ..., "num" | "text" | "at":
    value}} (the columns of its SearchAttribute rows, values in JSON form), position 0."""

    run = models.OneToOneField(
        "runtime.Run",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="search_pending",
        db_constraint=False,
    )
    attributes = models.JSONField()

    def __str__(self) -> str:
        return f"pending search attributes of {self.run_id}"


class SearchAttribute(models.Model):
    id = models.BigAutoField(primary_key=True)
    run = models.ForeignKey(
        "runtime.Run",
        on_delete=models.CASCADE,
        related_name="search_attributes",
        db_index=False,
        db_constraint=False,
    )
    name = models.CharField(max_length=64)
    kind = models.CharField(max_length=8)  # int, float, bool, str, datetime
    num = models.FloatField(null=True, blank=True)  # int, float and bool (0, 1)
    text = models.CharField(max_length=MAX_TEXT, null=True, blank=True)
    at = models.DateTimeField(null=True, blank=True)
    # The position of the `ctx.set_search` that set it (0: the start): a replay of an older
    # call never overwrites a newer value.
    position = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "name"], name="search_run_name_uniq"),
        ]
        indexes = [
            models.Index(
                fields=["name", "num"], name="search_num_idx", condition=Q(num__isnull=False)
            ),
            models.Index(
                fields=["name", "text"], name="search_text_idx", condition=Q(text__isnull=False)
            ),
            models.Index(
                fields=["name", "at"], name="search_at_idx", condition=Q(at__isnull=False)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name}={self.value!r}"

    @property
    def value(self) -> object:
        """The value in its JSON form (as the history records it)."""
        if self.kind == "str":
            return self.text
        if self.kind == "datetime":
            return self.at.isoformat() if self.at is not None else None
        if self.kind == "bool":
            return bool(self.num)
        if self.kind == "int" and self.num is not None:
            return int(self.num)
        return self.num
