"""The authentication backends: the provider's logins (mozilla-django-oidc's code flow, with
the ID token checked in full) and local passwords, which LOCAL_LOGIN can turn off."""

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from requests import RequestException

from dashboard.oidc import provider
from dashboard.oidc.claims import ClaimsRefused
from dashboard.oidc.users import sign_in

# What a refused ID token means, in the words the failure page shows.
TOKEN_REFUSALS = (
    (jwt.ExpiredSignatureError, "The provider's ID token has expired."),
    (jwt.InvalidAudienceError, "The provider's ID token was issued for another application."),
    (jwt.InvalidIssuerError, "The ID token comes from another provider than the one set up."),
    (jwt.InvalidSignatureError, "The ID token's signature is not valid: it was altered."),
    (jwt.ImmatureSignatureError, "The ID token is not valid yet (check the clocks)."),
    (jwt.MissingRequiredClaimError, "The ID token lacks a claim every login needs."),
    (jwt.PyJWTError, "The provider's ID token cannot be read."),
)


class LoginRefused(Exception):
    """A login through the provider is refused; the message says why in plain words."""


class ProviderBackend(OIDCAuthenticationBackend):
    """Log in through the provider: the endpoints from its discovery document, the user by
    its subject, the groups claim applied at every login."""

    def __init__(self, *args, **kwargs):
        # No request to the provider here: Django builds a backend for every request's user.
        self.UserModel = get_user_model()
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None

    # The library reads its endpoints from these attributes: here, from the discovery document.
    @property
    def OIDC_OP_TOKEN_ENDPOINT(self) -> str:
        return provider.endpoints().token_endpoint

    @property
    def OIDC_OP_USER_ENDPOINT(self) -> str:
        return provider.endpoints().userinfo_endpoint

    @property
    def OIDC_OP_JWKS_ENDPOINT(self) -> str:
        return provider.endpoints().jwks_uri

    def authenticate(self, request, **kwargs):
        # Only the callback passes a nonce; a password login is not this backend's.
        if not settings.OIDC_ENABLED or "nonce" not in kwargs:
            return None
        try:
            return super().authenticate(request, **kwargs)
        except (provider.ProviderUnavailable, RequestException) as exc:
            # The library's message quotes the token endpoint's whole answer: the kind is enough.
            raise LoginRefused(
                f"The identity provider could not be reached, or refused the login's code "
                f"({type(exc).__name__})."
            ) from None

    def verify_token(self, token, **kwargs):
        """Check the ID token's signature, expiry, audience, issuer and nonce."""
        try:
            key = self.retrieve_matching_jwk(token)
            payload = jwt.decode(
                token,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=provider.endpoints().issuer,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
                leeway=settings.OIDC_CLOCK_LEEWAY_SECONDS,
            )
        except SuspiciousOperation:
            raise LoginRefused(
                "The ID token is signed by a key the provider does not publish."
            ) from None
        except jwt.PyJWTError as exc:
            raise LoginRefused(_token_refusal(exc)) from None
        if "nonce" in kwargs and payload.get("nonce") != kwargs["nonce"]:
            raise LoginRefused(
                "The ID token belongs to another login (its nonce does not match): it was replayed."
            )
        return payload

    def get_or_create_user(self, access_token, id_token, payload):
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if not isinstance(userinfo, dict) or userinfo.get("sub") != payload.get("sub"):
            raise LoginRefused("The provider's user information names another account.")
        try:
            return sign_in(
                issuer=payload["iss"],
                claims={**payload, **userinfo},
                groups_claim=settings.OIDC_GROUPS_CLAIM,
            )
        except ClaimsRefused as exc:
            raise LoginRefused(str(exc)) from None


def _token_refusal(exc: jwt.PyJWTError) -> str:
    return next(words for kind, words in TOKEN_REFUSALS if isinstance(exc, kind))


class LocalPasswordBackend(ModelBackend):
    """Local passwords, while LOCAL_LOGIN is on; with it off, only a superuser's, and only
    when BREAK_GLASS_LOGIN is on (the way in when the provider is down)."""

    def user_can_authenticate(self, user) -> bool:
        if not super().user_can_authenticate(user):
            return False
        if settings.LOCAL_LOGIN:
            return True
        return settings.BREAK_GLASS_LOGIN and user.is_superuser
