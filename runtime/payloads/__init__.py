"""Payloads at rest: encryption with FANFOLD_PAYLOAD_KEYS and large values kept in a storage.

`packing.pack` turns a JSON value into the JSON the database stores and `packing.unpack`
turns it back (docs/data-lifecycle.md). This package module imports nothing, so that
runtime.conf may import `keys` without importing the rest.
"""
