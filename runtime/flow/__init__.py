"""Flow control: schedules, concurrency admission, global rate limits (see docs/flow-control.md)."""
