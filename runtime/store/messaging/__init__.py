"""What reaches a run from outside: messages, signals, values, approvals, streams and wake-ups."""
