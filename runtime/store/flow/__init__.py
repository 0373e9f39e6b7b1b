"""Flow control in the database: concurrency admission, rate limits, debounce, schedules."""
