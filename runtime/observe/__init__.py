"""Observability: Prometheus metrics, OpenTelemetry spans, the exporters that serve them.

`metrics`, `tracing` and `attempts` are pure (no Django): the checkpoint writer and the step
paths call them on every step, so each call is a dictionary lookup and a counter update, never
a lock of ours or a query. `exporter` serves a worker's metrics; `web` is the `/metrics` view
with the gauges read from the database at scrape time. See docs/observability.md.
"""
