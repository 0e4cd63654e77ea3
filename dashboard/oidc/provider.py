"""The identity provider's discovery document, read once and kept: the one adapter to the
provider's configuration (its endpoints), which mozilla-django-oidc wants as settings."""

import logging
import threading
import time
from dataclasses import dataclass

import requests
from django.conf import settings

logger = logging.getLogger(__name__)

# The endpoints rarely change; reading them again hourly picks up a provider's move without a
# restart and costs one request an hour.
DISCOVERY_KEPT_SECONDS = 3600
REQUIRED = ("issuer", "authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri")


class ProviderUnavailable(Exception):
    """The provider's discovery document cannot be read or is unusable; says why."""


@dataclass(frozen=True)
class ProviderEndpoints:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str
    # RP-initiated logout; None when the provider does not offer it.
    end_session_endpoint: str | None


def endpoints_from(document: object, expected_issuer: str) -> ProviderEndpoints:
    """The endpoints a discovery document names, checked: every one present, and the issuer
    the one configured (a document from elsewhere would let another provider sign logins)."""
    if not isinstance(document, dict):
        raise ProviderUnavailable("its discovery document is not a JSON object")
    missing = [key for key in REQUIRED if not isinstance(document.get(key), str)]
    if missing:
        raise ProviderUnavailable(f"its discovery document lacks {', '.join(missing)}")
    if expected_issuer and document["issuer"].rstrip("/") != expected_issuer.rstrip("/"):
        raise ProviderUnavailable(
            f"its discovery document names the issuer {document['issuer']!r}, "
            f"not OIDC_ISSUER {expected_issuer!r}"
        )
    end_session = document.get("end_session_endpoint")
    return ProviderEndpoints(
        **{key: document[key] for key in REQUIRED},
        end_session_endpoint=end_session if isinstance(end_session, str) else None,
    )


_lock = threading.Lock()
_kept: dict[str, tuple[float, ProviderEndpoints]] = {}


def endpoints() -> ProviderEndpoints:
    """The provider's endpoints, from its discovery document read at most hourly."""
    url = settings.OIDC_DISCOVERY_URL
    with _lock:
        kept = _kept.get(url)
        if kept is not None and time.monotonic() - kept[0] < DISCOVERY_KEPT_SECONDS:
            return kept[1]
    found = endpoints_from(_read(url), settings.OIDC_ISSUER)
    with _lock:
        _kept[url] = (time.monotonic(), found)
    return found


def forget() -> None:
    """Drop the kept documents (the tests start providers of their own)."""
    with _lock:
        _kept.clear()


def _read(url: str) -> object:
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        return response.json()
    except (requests.RequestException, ValueError) as exc:
        logger.warning("The identity provider's discovery document %s: %s", url, exc)
        raise ProviderUnavailable(
            f"the identity provider does not answer at {url} ({type(exc).__name__})"
        ) from None
