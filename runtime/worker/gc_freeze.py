"""What a worker process holds from its start-up is frozen out of the cyclic collector.

Before it runs a task a worker has imported Django, Celery, the project's workflows and their
libraries: over a hundred thousand objects that live as long as the process, which every full
collection scans again (80-90 ms each in a prefork child on the development machine). Objects
that outlive a young collection bring full collections on: a batch span processor keeps every
span until it exports it, so with tracing on a child collected fully every two thousand or so
steps, some 20 µs per step. `gc.freeze()` moves the objects alive at that moment to the
permanent generation, which collections skip; what the process makes later is collected as
before. A prefork child freezes at `worker_process_init`, before its first task (what it
inherited from the pool's parent: its collections then no longer write to those objects, which
also keeps their memory pages shared with the parent); the worker's main process, of any pool,
at `worker_ready`, after a collection. `FANFOLD_GC_FREEZE=0` turns both off.
"""

from __future__ import annotations

import gc


def freeze_startup_objects(*, collect: bool) -> None:
    """Freeze what this process holds now (after a full collection when `collect`: a prefork
    child does not, a collection would touch every page it shares)."""
    if collect:
        gc.collect()
    gc.freeze()
