"""The data lifecycle: retention (purge), archives and their restore, and `rekey`.

`retention` deletes finished runs in short batches that skip locked rows; `archive` writes a
run as one JSON document to STORAGES["fanfold_archive"] and reads it back; `rekey`
re-encrypts stored payloads with the first payload key (docs/data-lifecycle.md).
"""
