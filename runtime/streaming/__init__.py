"""Streams and run wake-ups: what a run writes for its readers, and who is told at once.

`writer` is `runtime.stream(name).write(value)`; `reader` follows a stream (read_stream, the
SSE endpoint); `shared` lets the readers of one stream in a process share each look at the
database; `wakeups` wakes readers and `RunHandle.wait()` when a run changes.
"""
