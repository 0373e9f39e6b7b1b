"""Throttling of the one unauthenticated endpoint: posts to callback tokens, per client."""

from __future__ import annotations

from rest_framework.throttling import ScopedRateThrottle


class CallbackRateThrottle(ScopedRateThrottle):
    """Rate `callbacks` of REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], keyed by client address."""
