"""The workflow side of a run: what DurableContext's methods are made of.

The replay cursor (positions, the recorded history, writes), the execution session, and the
calls that build on them: steps and sleeps, callbacks, conditions, patch markers, messages,
values and signals. Each call that leaves a record goes through `DurableCall` (calls.py);
every step body goes through the one body runner (body.py).
"""
