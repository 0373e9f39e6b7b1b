"""What keeps runs moving when messages are lost or workers die: leases and the sweeps."""
