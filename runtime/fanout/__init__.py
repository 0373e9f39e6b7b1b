"""`ctx.all` and `ctx.map` from both sides: the workflow that fans out, the workers that run them.

- `group`: the workflow side: record a fan-out's branches and group, publish them after the
  commit, suspend, and settle the recorded branches on replay.
- `branch`: the branch task (`fanfold.run_branch`): claim one attempt, run its body, report.
- `chunk`: one message carrying consecutive branches of a fan-out's first dispatch.
- `chunk_window`: a chunk's branches claimed, run and reported a window at a time.
- `window_flush`: a window's waiting reports committed while a later body of it runs on.
- `async_branches`: `async def` branch bodies, many at once on the process's event loop.
- `children`: a branch that is a whole child run, polled until it finishes.
- `report`: a branch attempt's outcome, recorded and then acted on (release, publish, resume).
- `interrupted`: at-most-once attempts whose worker died: failed, never run again.
- `sweep`: the recovery sweep, so no branch is stranded by a lost message or a dead worker.
"""
