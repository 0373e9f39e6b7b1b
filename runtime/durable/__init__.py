"""The workflow side of a run: what DurableContext's methods are made of.

The replay cursor (positions, the recorded history, writes), the execution session, the step
info a body sees, and the calls that build on them: callbacks, conditions, patch markers, the
replay check, and the one body runner every step body goes through.
"""
