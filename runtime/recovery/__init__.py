"""What keeps runs moving when messages are lost or workers die: the run sweep and the
takeover of dead processes' leases (the leases themselves are runtime.leases)."""
