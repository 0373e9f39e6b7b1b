"""Callback tokens out of the logs: a token in a `/callbacks/<token>/` path is a credential.

Pure (no Django import): gunicorn's access logger (api/gunicorn_logging.py) loads it before
Django does, and Django's logging uses `CallbackTokenFilter` (config/settings.py's LOGGING).
"""

from __future__ import annotations

import logging
import re

# The path segment after /callbacks/ (not the bare /callbacks/ of the body and header form).
_CALLBACK_PATH = re.compile(r"(/callbacks/)[^/?#\s\"']+")
MASK = "***"


def mask_callback_tokens(text: str) -> str:
    """`text` with every token in a callback path replaced by `***`."""
    return _CALLBACK_PATH.sub(rf"\g<1>{MASK}", text) if "/callbacks/" in text else text


class CallbackTokenFilter(logging.Filter):
    """A logging filter that masks callback tokens in a record's message (Django's
    `django.request` and `django.server` records name the request path)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_callback_tokens(message)
        if masked != message:
            record.msg, record.args = masked, ()
        return True
