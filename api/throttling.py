"""Throttling: per user on the authenticated endpoints, per client on the callback endpoint.

The counts live in Django's default cache: per process with the demo's local-memory cache,
shared by every web process when CACHES points at Redis or Memcached.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from rest_framework.request import Request
from rest_framework.throttling import ScopedRateThrottle, UserRateThrottle

from runtime import conf

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class ApiUserRateThrottle(UserRateThrottle):
    """FANFOLD_API_USER_RATE requests per user ("" for no limit), on every endpoint that has
    users (REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"])."""

    def get_rate(self) -> str | None:
        return conf.get().API_USER_RATE or None

    def get_ident(self, request: Request) -> str:
        return client_address(request)


class CallbackRateThrottle(ScopedRateThrottle):
    """Rate `callbacks` of REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], keyed by client address."""

    def get_ident(self, request: Request) -> str:
        return client_address(request)


def client_address(request: Request) -> str:
    """The client's address: the direct peer's, unless that peer is one of
    FANFOLD_TRUSTED_PROXIES; then the nearest address in X-Forwarded-For that is not a trusted
    proxy. Anyone else's X-Forwarded-For is not believed: a client could name any address
    there and so never be throttled.
    """
    peer = str(request.META.get("REMOTE_ADDR") or "")
    trusted = _networks(conf.get().TRUSTED_PROXIES)
    if not trusted or not _within(peer, trusted):
        return peer
    forwarded = str(request.META.get("HTTP_X_FORWARDED_FOR") or "")
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _within(hop, trusted):
            return hop if _address(hop) is not None else peer
    return hops[0] if hops else peer


def _networks(entries: Iterable[str]) -> list[Network]:
    return [ipaddress.ip_network(entry, strict=False) for entry in entries]


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _within(text: str, networks: list[Network]) -> bool:
    address = _address(text)
    return address is not None and any(address in network for network in networks)
