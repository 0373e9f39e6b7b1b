"""What each process keeps for itself: its background threads and its per-process objects.

Both sides of the runtime use these (the checkpoint writer, the store's connections, the
sweeps, the stream wake-ups), so they live below all of them and import no runtime unit.
"""
