"""The operator's command line (`manage.py fanfold`, `manage.py startrun`) and its parts.

`commands/fanfold.py` wires the subcommands; `records` is what they show of runs and steps,
`console` draws tables and a progress bar, and `replay`, `messages` and `lifecycle` hold their
own subcommands (parsers and actions).
"""
