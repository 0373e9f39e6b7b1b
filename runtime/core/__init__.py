"""The pure core of the runtime: no Django, no Celery, no I/O.

Replay rules, step identity, retry decisions and JSON checks live here so they can be tested
and reasoned about without a database.
"""
