"""Prometheus metrics after real runs: scraped from a worker's exporter (prefork with the
multiprocess directory, threads without) and from the web process's `/metrics`."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from runtime import start
from runtime.models import Run
from runtime.services import cancel_run, start_run
from runtime.testing import InMemoryDispatcher, use_dispatcher, use_writer
from tests.acceptance import observe_flows as flows
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(autouse=True)
def in_process(counters_redis: Any) -> Iterator[None]:
    with use_writer():
        yield


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def scrape_worker(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return parse(response.read().decode())


def run_the_workflows() -> Any:
    """Two sequential runs with a retry each and a 5-branch fan-out; returns the fan-out run."""
    handles = [start(flows.steps, 3), start(flows.steps, 3), start(flows.fan, 5)]
    for handle in handles:
        handle.wait(timeout=60, poll_interval=0.05)
    return handles[-1]


@pytest.mark.parametrize("pool", ["prefork", "threads"])
def test_observe_worker_metrics_count_the_runs_steps_retries_and_publishes(
    tmp_path: Path, pool: str, admin_client: Client
) -> None:
    port = free_port()
    env = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, "FANFOLD_METRICS_PORT": str(port)}
    # A message a branch: a chunk that outlasts its time (a loaded machine) publishes the rest
    # on their own, which would make the publish counts below vary.
    env["FANFOLD_BRANCH_CHUNK"] = "1"
    if pool == "prefork":
        (tmp_path / "prom").mkdir()
        env["PROMETHEUS_MULTIPROC_DIR"] = str(tmp_path / "prom")
    with running_worker(f"metrics-{pool}", pool, 2, **env):
        fan = run_the_workflows()
        samples = scrape_worker(port)

    total = "fanfold_runs_finished_total"
    assert value(samples, "fanfold_runs_started_total", workflow="tests.observe.steps") == 2
    assert value(samples, total, workflow="tests.observe.steps", status="completed") == 2
    assert value(samples, total, workflow="tests.observe.fan", status="completed") == 1
    steps = "fanfold_step_duration_seconds_count"
    # 3 + 3 inline naps, the fan-out's inline nap and its 5 branches.
    assert value(samples, steps, step="tests.observe.nap", status="completed") == 12
    assert value(samples, steps, step="tests.observe.shaky", status="retrying") == 2
    assert value(samples, steps, step="tests.observe.shaky", status="completed") == 2
    assert value(samples, "fanfold_step_retries_total", step="tests.observe.shaky") == 2
    assert value(samples, "fanfold_publish_batch_size_count") == 1
    assert value(samples, "fanfold_publish_batch_size_sum") == 5
    assert value(samples, "fanfold_checkpoint_batch_size_count") > 0
    assert value(samples, "fanfold_checkpoint_commit_seconds_count") == value(
        samples, "fanfold_checkpoint_batch_size_count"
    )
    # The admin draws the real fan-out: its inline step and its branches, in a group.
    page = admin_client.get(reverse("admin:runtime_run_change", args=[fan.id])).content.decode()
    assert "fan-out #2 to #6: 5 branches, 5 completed (succeeded)" in page
    assert page.count("data-position=") == 6


def test_observe_web_metrics_need_staff_or_the_token_and_read_the_queue(
    settings: Any, django_user_model: type[User]
) -> None:
    settings.FANFOLD = {**settings.FANFOLD, "METRICS_TOKEN": "s3cret-token"}
    with use_dispatcher(InMemoryDispatcher()):  # stays pending: no worker sees it
        waiting, _ = start_run(flows.steps, [1])
        doomed, _ = start_run(flows.steps, [1])
    Run.objects.filter(id=waiting.id).update(created_at=timezone.now() - timedelta(minutes=5))
    client = Client()
    before = parse(client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token").text)
    cancel_run(doomed.id)

    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token")
    assert response.status_code == 200
    samples = parse(response.text)
    assert value(samples, "fanfold_runs", status="pending") == 1
    assert value(samples, "fanfold_runs", status="waiting") == 0
    assert value(samples, "fanfold_oldest_pending_run_age_seconds") >= 299
    cancelled = {"workflow": "tests.observe.steps", "status": "cancelled"}
    finished = "fanfold_runs_finished_total"
    assert value(samples, finished, **cancelled) == value(before, finished, **cancelled) + 1

    django_user_model.objects.create_user("ops", password="pw-ops-12345", is_staff=True)
    client.login(username="ops", password="pw-ops-12345")
    assert client.get("/metrics").status_code == 200
