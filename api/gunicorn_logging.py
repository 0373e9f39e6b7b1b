"""gunicorn's access log without callback tokens, shipped in the wheel for every site.

Set `logger_class = "api.gunicorn_logging.TokenMaskingLogger"` in a gunicorn configuration.

Every atom an access log format may print (the request line, the path, headers, environ) is
masked, and the Authorization header (which may carry a callback token as a Bearer
credential, or a user's API token) is never printed.
"""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

from api.log_masking import MASK, mask_callback_tokens


class TokenMaskingLogger(Logger):
    """gunicorn's logger, with callback tokens and Authorization headers masked."""

    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict[str, Any]:
        atoms = super().atoms(resp, req, environ, request_time)
        masked = {
            key: mask_callback_tokens(value) if isinstance(value, str) else value
            for key, value in atoms.items()
        }
        for key in ("{authorization}i", "{http_authorization}e"):
            if key in masked:
                masked[key] = MASK
        return masked
