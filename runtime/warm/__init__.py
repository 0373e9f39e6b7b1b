"""Warm resumes: a worker keeps the sync runs it suspended parked at their waits
(runtime.durable.parking), so that resuming one reads only the history's new records and runs
only the code after the wait, instead of loading the whole history and replaying it.

`WarmRuns` is the per-thread cache (bounded by FANFOLD_WARM_RUNS and FANFOLD_WARM_RUN_SECONDS);
`runtime.warm.passes` is how an execution pass takes a run from it and gives it back.
"""
