"""The runtime's services: start, look up and cancel runs, post to callbacks.

They own the transactions (through runtime.store); Celery tasks, views and the admin call them.
"""

from __future__ import annotations

from runtime.services.callback_posts import CallbackReceipt, post_callback
from runtime.services.cancelling import Actor, cancel_run, get_run_row, with_actor
from runtime.services.starting import start_run

__all__ = [
    "Actor",
    "CallbackReceipt",
    "cancel_run",
    "get_run_row",
    "post_callback",
    "start_run",
    "with_actor",
]
