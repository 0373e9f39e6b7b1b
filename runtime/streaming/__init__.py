"""Streams and run wake-ups: what a run writes for its readers, and who is told at once.

`writer` is `runtime.stream(name).write(value)`; `reader` follows a stream (read_stream, the
SSE endpoint); `signals` wakes readers and `RunHandle.wait()` when a run changes.
"""
