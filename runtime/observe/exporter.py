"""What a process exposes to Prometheus, and a worker's own HTTP exporter.

Prefork workers use prometheus_client's multiprocess mode: with `PROMETHEUS_MULTIPROC_DIR` set
in the worker's environment (an empty directory, one per worker, before it starts) every child
writes its values to files there and the worker's main process serves them all, summed, on
`FANFOLD_METRICS_PORT`. A threads (or solo) worker is one process and needs no directory.
"""

from __future__ import annotations

import logging
import os
import threading

from prometheus_client import REGISTRY, CollectorRegistry, multiprocess, start_http_server

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"

log = logging.getLogger("fanfold.metrics")
_started: set[int] = set()
_lock = threading.Lock()


def multiprocess_mode() -> bool:
    """Whether values live in per-process files (PROMETHEUS_MULTIPROC_DIR is set)."""
    return bool(os.environ.get(MULTIPROC_DIR))


def process_registry() -> CollectorRegistry:
    """The values to expose: every process's (summed) in multiprocess mode, else this one's."""
    if not multiprocess_mode():
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


def start_worker_exporter(port: int, *, prefork: bool, address: str = "0.0.0.0") -> bool:
    """Serve this worker's metrics on `port` (once per process); False if already serving.

    A prefork worker without PROMETHEUS_MULTIPROC_DIR would serve only its main process,
    which runs no tasks: that is refused with a warning instead of exporting zeros.
    """
    if prefork and not multiprocess_mode():
        log.warning(
            "FANFOLD_METRICS_PORT is set on a prefork worker without %s: no metrics exported "
            "(set it to an empty directory per worker, or use -P threads)",
            MULTIPROC_DIR,
        )
        return False
    with _lock:
        if os.getpid() in _started:
            return False
        start_http_server(port, addr=address, registry=process_registry())
        _started.add(os.getpid())
    log.info("metrics exporter listening on %s:%s", address, port)
    return True


def child_exited(pid: int) -> None:
    """Forget a prefork child's live gauges (its counters stay counted)."""
    if multiprocess_mode():
        multiprocess.mark_process_dead(pid)
