"""Database connections seen from both ends: the server's sessions (`pg_stat_activity`, on a
direct session of the benchmark's own) and each worker process's TCP connections to the
pooler's and the database's ports (from /proc, Linux only).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from runtime.store.direct import open_direct

ESTABLISHED = "01"
_SESSIONS = (
    "SELECT count(*), count(*) FILTER (WHERE datname = current_database()) "
    "FROM pg_stat_activity WHERE backend_type = 'client backend'"
)


def _peer_ports() -> dict[int, int]:
    """Socket inode -> remote port, for every established TCP connection on this machine."""
    peers: dict[int, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == ESTABLISHED:
                peers[int(fields[9])] = int(fields[2].rsplit(":", 1)[1], 16)
    return peers


def _socket_inodes(pid: int) -> list[int]:
    inodes = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.append(int(target[8:-1]))
    except OSError:
        pass
    return inodes


@dataclass
class ConnectionPeaks:
    """The largest counts seen by `ConnectionSampler` so far."""

    server_all: int = 0
    server_database: int = 0
    per_process: dict[int, dict[int, int]] = field(default_factory=dict)  # pid -> port -> most

    def process_summary(self, port: int) -> dict[str, float]:
        counts = [ports.get(port, 0) for ports in self.per_process.values()]
        if not counts:
            return {"max": 0, "mean": 0.0}
        return {"max": max(counts), "mean": round(sum(counts) / len(counts), 2)}


class ConnectionSampler:
    """A thread that samples server sessions and the processes' connections to `ports`
    every `interval` seconds until stopped."""

    def __init__(self, pids: Iterable[int], ports: Iterable[int], interval: float = 0.5) -> None:
        self._pids = list(pids)
        self._ports = set(ports)
        self._interval = interval
        self._stop = threading.Event()
        self.peaks = ConnectionPeaks()
        self._thread = threading.Thread(target=self._run, name="bench-connections", daemon=True)

    def __enter__(self) -> ConnectionSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with open_direct("fanfold-bench-sampler") as raw:
            self._sample(raw)  # at least once, however short the block
            while not self._stop.wait(self._interval):
                self._sample(raw)

    def _sample(self, raw: psycopg.Connection) -> None:
        row = raw.execute(_SESSIONS).fetchone()
        if row is not None:
            self.peaks.server_all = max(self.peaks.server_all, int(row[0]))
            self.peaks.server_database = max(self.peaks.server_database, int(row[1]))
        peers = _peer_ports()
        for pid in self._pids:
            counts: dict[int, int] = {}
            for inode in _socket_inodes(pid):
                port = peers.get(inode)
                if port in self._ports:
                    counts[port] = counts.get(port, 0) + 1
            most = self.peaks.per_process.setdefault(pid, {})
            for port, count in counts.items():
                most[port] = max(most.get(port, 0), count)
