"""The checkpoint write path: a batch's history rows, the sink and its PostgreSQL fast path."""
