"""Flow control of runs and bodies (docs/flow-control.md).

`admission` lets at most N runs of a `concurrency=N` workflow execute at once (per key, by
priority, then first come); `ratelimit` gives each body of a `rate_limit` step its turn
across every worker. Schedules, the third kind of flow control, are runtime.schedules.
"""
