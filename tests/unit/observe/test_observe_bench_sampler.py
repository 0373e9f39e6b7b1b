"""The benchmark's SDK provider (bench.tracing): every span by default, a fraction of the run
passes' traces with `bench ... --observe --trace-ratio R`."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased, TraceIdRatioBased

from bench import tracing


def test_the_default_provider_keeps_every_span(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(tracing.RATIO_ENV, raising=False)
    sampler = tracing.make_provider(tracing.sample_ratio()).sampler
    assert sampler.get_description() == ParentBased(ALWAYS_ON).get_description()


def test_a_ratio_keeps_that_fraction_of_root_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tracing.RATIO_ENV, "0.1")
    assert tracing.sample_ratio() == 0.1
    sampler = tracing.make_provider(tracing.sample_ratio()).sampler
    assert sampler.get_description() == ParentBased(TraceIdRatioBased(0.1)).get_description()
