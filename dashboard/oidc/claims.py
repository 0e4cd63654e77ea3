"""A provider's claims into the dashboard's user: pure rules, no I/O."""

import hashlib
import re

# Django's default user name: at most 150 characters, letters, digits and @.+-_ only.
USERNAME_MAX = 150
USERNAME_CHARACTERS = re.compile(r"^[\w.@+-]+\Z")
SUBJECT_MAX = 255


class ClaimsRefused(Exception):
    """The provider's claims cannot name a user; the message says why in plain words."""


def subject_of(claims: dict) -> str:
    """The provider's subject (`sub`): who the person is at the provider, for good."""
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject or len(subject) > SUBJECT_MAX:
        raise ClaimsRefused("The provider sent no usable subject (sub) for this account.")
    return subject


def username_from(claims: dict) -> str:
    """The user name a provider account gets: its `preferred_username` when Django accepts it,
    else `oidc:<sub>` (hashed when the subject is too long for a user name)."""
    preferred = claims.get("preferred_username")
    if (
        isinstance(preferred, str)
        and len(preferred) <= USERNAME_MAX
        and USERNAME_CHARACTERS.match(preferred)
    ):
        return preferred
    return fallback_username(subject_of(claims))


def fallback_username(subject: str) -> str:
    """`oidc:<sub>`: the user name of an account whose preferred name is unusable or taken."""
    name = f"oidc:{subject}"
    if len(name) <= USERNAME_MAX:
        return name
    return "oidc:" + hashlib.sha256(subject.encode()).hexdigest()


def profile_from(claims: dict) -> dict[str, str]:
    """The e-mail address and names the provider gives, cut to the fields' lengths."""
    fields = {"email": ("email", 254), "first_name": ("given_name", 150)}
    fields["last_name"] = ("family_name", 150)
    profile = {}
    for field, (claim, limit) in fields.items():
        value = claims.get(claim)
        profile[field] = value[:limit] if isinstance(value, str) else ""
    return profile
