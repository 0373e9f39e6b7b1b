"""The observability settings, the worker exporter's refusal and a branch's span link."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import REGISTRY

from publisher import tracing as publish_tracing
from runtime import conf
from runtime.observe import exporter
from runtime.observe.tracing import links_from


def test_observe_settings_parse_switches_tokens_and_ports() -> None:
    parsed = conf.parse({"METRICS": "off", "TRACING": "1", "METRICS_TOKEN": "t", "METRICS_PORT": 0})
    assert (parsed.METRICS, parsed.TRACING, parsed.METRICS_TOKEN, parsed.METRICS_PORT) == (
        False,
        True,
        "t",
        0,
    )
    assert conf.parse({}).METRICS is True and conf.parse({}).METRICS_PORT == 0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"METRICS": "maybe"}, "FANFOLD_METRICS must be on or off"),
        ({"METRICS_PORT": 70000}, "FANFOLD_METRICS_PORT must be a TCP port"),
        ({"METRICS_PORT": -1}, "FANFOLD_METRICS_PORT must not be negative"),
        ({"METRICS_TOKEN": 5}, "FANFOLD_METRICS_TOKEN must be a string"),
    ],
)
def test_observe_settings_refuse_bad_values(raw: dict[str, object], message: str) -> None:
    with pytest.raises(conf.SettingsError, match=message):
        conf.parse(raw)


def test_observe_links_from_a_traceparent_name_its_span() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("publish") as span:
        traceparent = publish_tracing.current_trace_headers()["traceparent"]
    [link] = links_from(traceparent)
    assert link.context.span_id == span.get_span_context().span_id
    assert links_from(None) == () and links_from("garbage") == ()
    assert links_from(traceparent) == (link,)  # parsed once, the same link again


def test_observe_a_prefork_worker_without_the_multiprocess_directory_exports_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(exporter.MULTIPROC_DIR, raising=False)
    with caplog.at_level(logging.WARNING, logger="fanfold.metrics"):
        assert exporter.start_worker_exporter(1, prefork=True) is False
    assert "PROMETHEUS_MULTIPROC_DIR" in caplog.text
    assert exporter.process_registry() is REGISTRY
