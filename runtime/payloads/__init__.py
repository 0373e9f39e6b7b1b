"""Payloads at rest: encryption with FANFOLD_PAYLOAD_KEYS and large values kept in a storage.

`packing.pack` turns a JSON value into the JSON the database stores and `packing.unpack`
turns it back (docs/data-lifecycle.md). The keys and the errors live in runtime.core
(payload_keys, payload_errors), which runtime.conf reads to check the settings.
"""
