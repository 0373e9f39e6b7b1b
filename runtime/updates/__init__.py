"""Updates from the caller's side (contract section 2l): ask a run, get its answer.

- calling: `send_update` (what `RunHandle.update` does: validate, accept, wait for the answer,
  woken by the answer's commit) and `get_update` (read one by id, later).
- starting: `start_with_update`, a start (or the run of its idempotency key) and an update in
  one call.

The workflow side (`ctx.next_update`, `upd.reply`) is runtime.durable.updates.
"""
