"""The single sign-on settings read from the environment: pure, so settings.py stays flat."""

from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

DISCOVERY_PATH = "/.well-known/openid-configuration"


def discovery_url(issuer: str, discovery: str) -> str:
    """The discovery document's address: OIDC_DISCOVERY_URL, else the issuer's well-known
    one; empty when neither is set (single sign-on is off)."""
    if discovery:
        return _checked_url("OIDC_DISCOVERY_URL", discovery)
    if issuer:
        return _checked_url("OIDC_ISSUER", issuer).rstrip("/") + DISCOVERY_PATH
    return ""


def scopes(value: str) -> str:
    """The scopes asked for, space-separated; `openid` is required by the protocol."""
    names = value.replace(",", " ").split()
    if "openid" not in names:
        raise ImproperlyConfigured(f"OIDC_SCOPES must include openid, not {value!r}")
    return " ".join(dict.fromkeys(names))


def provider_origin(url: str) -> str:
    """The provider's origin, which the login and logout redirects lead to (CSP form-action)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _checked_url(name: str, value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ImproperlyConfigured(
            f"{name} must be an http(s) address such as https://login.example.com/realms/main, "
            f"not {value!r}"
        )
    return value
