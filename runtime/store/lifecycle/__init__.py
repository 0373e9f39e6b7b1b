"""A run's life past its steps: leases, liveness, partitions, the purge, archives, rekey."""
