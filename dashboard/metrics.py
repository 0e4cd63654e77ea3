"""GET /metrics: the stored results in Prometheus' text format, for a token or allowed addresses.

Never open by default: with neither METRICS_TOKEN nor METRICS_ALLOWED_ADDRESSES set, nobody
may read it. It needs no login (a scraper has no session); docs/metrics.md has the details.
"""

import hmac
import ipaddress
import logging
from collections.abc import Iterable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4

from offsets.queries import metrics as metrics_service

logger = logging.getLogger(__name__)

DISABLED = (
    "/metrics is disabled. Set METRICS_TOKEN (a secret the scraper sends as "
    "'Authorization: Bearer <token>') or METRICS_ALLOWED_ADDRESSES (the scrapers' IP "
    "addresses or CIDR networks) to enable it; see docs/metrics.md.\n"
)
NEEDS_TOKEN = "/metrics needs 'Authorization: Bearer <METRICS_TOKEN>'.\n"
MALFORMED = (
    "The Authorization header must be 'Bearer <METRICS_TOKEN>' (one space, then the token).\n"
)
WRONG_TOKEN = "The bearer token is not METRICS_TOKEN.\n"
NO_TOKENS = "/metrics takes no token here (METRICS_TOKEN is not set): send no Authorization.\n"


def address_allowed(address: str | None, networks: Iterable[str]) -> bool:
    """True when `address` (REMOTE_ADDR) lies in one of `networks` (IP addresses or CIDRs)."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    # A dual-stack server sees IPv4 clients as ::ffff:a.b.c.d.
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in ipaddress.ip_network(network) for network in networks)


def bearer_token(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None if it has another form."""
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip() or " " in token.strip():
        return None
    return token.strip()


def _plain(message: str, status: int, challenge: str | None = None) -> HttpResponse:
    response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    if challenge is not None:
        response["WWW-Authenticate"] = challenge
    return response


def _refusal(request: HttpRequest) -> HttpResponse | None:
    """Why the caller may not read /metrics, as the response to send; None if it may.

    A token that is sent must be right, even from an allowed address: a scraper holding a
    stale token is misconfigured, and saying so beats serving it by luck of its address.
    """
    token = settings.METRICS_TOKEN
    networks = settings.METRICS_ALLOWED_ADDRESSES
    if not token and not networks:
        return _plain(DISABLED, 403)
    authorization = request.headers.get("Authorization")
    if authorization is not None:
        if not token:
            return _plain(NO_TOKENS, 400)
        presented = bearer_token(authorization)
        if presented is None:
            return _plain(MALFORMED, 401, 'Bearer error="invalid_request"')
        if hmac.compare_digest(presented.encode(), token.encode()):
            return None
        logger.warning(
            "Refused /metrics to %s: wrong bearer token", request.META.get("REMOTE_ADDR")
        )
        return _plain(WRONG_TOKEN, 401, 'Bearer error="invalid_token"')
    address = request.META.get("REMOTE_ADDR")
    if address_allowed(address, networks):
        return None
    if token:
        return _plain(NEEDS_TOKEN, 401, "Bearer")
    return _plain(
        f"/metrics is not open to {address}: it is not in METRICS_ALLOWED_ADDRESSES.\n", 403
    )


@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    """Serve every cluster's series to a caller with the token or from an allowed address."""
    if request.method not in ("GET", "HEAD"):
        response = _plain("/metrics answers GET only.\n", 405)
        response["Allow"] = "GET, HEAD"
        return response
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    # Always the 0.0.4 text format, which every Prometheus reads: prometheus-client's content
    # negotiation (choose_encoder) raises on a malformed version in the Accept header.
    return HttpResponse(metrics_service.exposition(), content_type=CONTENT_TYPE_PLAIN_0_0_4)
