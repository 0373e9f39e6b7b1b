"""Leases: who executes a run or a branch now. The keepers renew the leases a process holds;
each process's liveness lock lets others see at once that it died."""
