"""Database connections seen from both ends: the server's sessions (`pg_stat_activity`, on a
direct session of the benchmark's own) and each worker process's TCP connections to the
pooler's and the database's ports (from /proc, Linux only). Behind a PgBouncer whose admin
console answers, also how many of a process's pooled connections hold a server connection
at once (in a transaction: "busy").
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from runtime.store.direct import open_direct

ESTABLISHED = "01"
_SESSIONS = (
    "SELECT count(*), count(*) FILTER (WHERE datname = current_database()) "
    "FROM pg_stat_activity WHERE backend_type = 'client backend'"
)


def _peer_ports() -> dict[int, tuple[int, int]]:
    """Socket inode -> (local port, remote port), for every established TCP connection on this
    machine."""
    peers: dict[int, tuple[int, int]] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == ESTABLISHED:
                local, remote = (int(f.rsplit(":", 1)[1], 16) for f in fields[1:3])
                peers[int(fields[9])] = (local, remote)
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
    busy_per_process: dict[int, int] = field(default_factory=dict)  # pid -> most busy at once
    busy_sampled: bool = False

    def process_summary(self, port: int) -> dict[str, float]:
        counts = [ports.get(port, 0) for ports in self.per_process.values()]
        if not counts:
            return {"max": 0, "mean": 0.0}
        return {"max": max(counts), "mean": round(sum(counts) / len(counts), 2)}

    def busy_summary(self) -> dict[str, float] | None:
        """Pooled connections of one process in a transaction at once (None: not sampled)."""
        if not self.busy_sampled:
            return None
        counts = list(self.busy_per_process.values()) or [0]
        return {"max": max(counts), "mean": round(sum(counts) / len(counts), 3)}


class ConnectionSampler:
    """A thread that samples server sessions and the processes' connections to `ports`
    every `interval` seconds until stopped."""

    def __init__(
        self,
        pids: Iterable[int],
        ports: Iterable[int],
        interval: float = 0.5,
        pooler_console: dict[str, Any] | None = None,
    ) -> None:
        self._pids = list(pids)
        self._ports = set(ports)
        self._console = pooler_console
        self._pooler_port = int(pooler_console["port"]) if pooler_console else None
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
        console = _open_console(self._console)
        self.peaks.busy_sampled = console is not None
        with open_direct("fanfold-bench-sampler") as raw:
            self._sample(raw, console)  # at least once, however short the block
            while not self._stop.wait(self._interval):
                self._sample(raw, console)
        if console is not None:
            console.close()

    def _sample(self, raw: psycopg.Connection, console: psycopg.Connection | None) -> None:
        row = raw.execute(_SESSIONS).fetchone()
        if row is not None:
            self.peaks.server_all = max(self.peaks.server_all, int(row[0]))
            self.peaks.server_database = max(self.peaks.server_database, int(row[1]))
        peers = _peer_ports()
        linked = _linked_client_ports(console) if console is not None else set()
        for pid in self._pids:
            counts: dict[int, int] = {}
            busy = 0
            for inode in _socket_inodes(pid):
                local, port = peers.get(inode, (0, 0))
                if port in self._ports:
                    counts[port] = counts.get(port, 0) + 1
                    # Only the pooler's clients are linked; a direct session's local port
                    # may equal one of theirs by chance.
                    busy += port == self._pooler_port and local in linked
            most = self.peaks.per_process.setdefault(pid, {})
            for port, count in counts.items():
                most[port] = max(most.get(port, 0), count)
            self.peaks.busy_per_process[pid] = max(self.peaks.busy_per_process.get(pid, 0), busy)


def _open_console(params: dict[str, Any] | None) -> psycopg.Connection | None:
    """PgBouncer's admin console (its `pgbouncer` database), or None where none answers."""
    if params is None:
        return None
    try:
        return psycopg.connect(**{**params, "dbname": "pgbouncer"}, autocommit=True)
    except psycopg.Error:
        return None


def _linked_client_ports(console: psycopg.Connection) -> set[int]:
    """The client ports of PgBouncer's clients paired with a server connection right now.
    The console speaks only the simple query protocol, hence libpq's own call."""
    result = console.pgconn.exec_(b"SHOW CLIENTS")
    names = [result.fname(i) for i in range(result.nfields)]
    if b"link" not in names or b"port" not in names:
        return set()
    port, link = names.index(b"port"), names.index(b"link")
    return {
        int(result.get_value(row, port) or 0)
        for row in range(result.ntuples)
        if result.get_value(row, link)
    }
