"""The workflow side of a run: what DurableContext's methods are made of.

`cursor` (positions, the recorded history, writes), `session` (one execution of a run: its
lease and checkpoint session), `stepinfo` (what a body sees as `current_step()`) and `body`
(the one runner every step body goes through), and the calls built on them: `steps`
(`ctx.step`, `ctx.sleep`), `callbacks`, `conditions` and `markers` (`ctx.patched`).
`awaited` runs an async workflow, the database in the run's thread.
"""
