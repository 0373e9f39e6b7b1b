"""Deploying new code under runs in flight (docs/deploying.md): checked upgrades of a
version's runs to this process's code, and retiring a version.

Above the runtime's workflow side (it replays histories: runtime.replay_check); what each
version has in flight and where its messages go are runtime.versions, below it.
"""
