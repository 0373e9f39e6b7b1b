"""Fanfold's Django admin: runs (list, page, timeline, workflow page, forks) and flow control.

Django's admin autodiscovery imports this package; importing the modules below registers
their ModelAdmins with the default site.
"""

from __future__ import annotations

from runtime.admin.flow import ConcurrencySlotAdmin, ScheduleAdmin
from runtime.admin.runs import RunAdmin

__all__ = ["ConcurrencySlotAdmin", "RunAdmin", "ScheduleAdmin"]
