"""Messages, values and signals between runs, and debounced starts (contract section 2d).

- mailbox: `send` puts a message in a run's mailbox; `ctx.recv` takes the oldest one.
- values: `ctx.set_value` records a run's latest value of a key; `get_value` reads it.
- signals: `emit_signal` delivers to every run waiting in `ctx.wait_for_signal` with a
  matching `match` (found through hashed keys, runtime.core.matching).
- the workflow side of all three (`ctx.recv`, ...) is runtime.durable.messaging.
- sending: the public `send` and `emit_signal`.
- debounce: starts coalesced into one pending run.

Every delivery wakes the waiting run after its commit, the way a callback post does.
"""
