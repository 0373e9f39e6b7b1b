"""`ctx.all` from both sides: the group's start and resume in the workflow (group), the branch
task (branch, report, children), takeover of interrupted at-most-once attempts (takeover) and
the fan-out sweep (sweep)."""
