"""The dashboard user of a provider account: found by its subject, made at its first login,
kept up to date and put in the mapped groups at every login."""

from django.contrib.auth import get_user_model
from django.db import transaction

from dashboard.oidc.claims import fallback_username, profile_from, subject_of, username_from
from offsets.models import ProviderIdentity
from offsets.rights.provider_groups import apply_provider_groups, claim_values


@transaction.atomic
def sign_in(*, issuer: str, claims: dict, groups_claim: str):
    """Return the user of the account `claims` describe, made or updated, in the groups the
    groups claim maps to."""
    subject = subject_of(claims)
    identity = (
        ProviderIdentity.objects.select_related("user")
        .filter(issuer=issuer, subject=subject)
        .first()
    )
    if identity is None:
        user = get_user_model().objects.create_user(_free_username(claims, None))
        ProviderIdentity.objects.create(user=user, issuer=issuer, subject=subject)
    else:
        user = identity.user
        user.username = _free_username(claims, user)
    for field, value in profile_from(claims).items():
        setattr(user, field, value)
    user.save()
    apply_provider_groups(user, claim_values(claims, groups_claim))
    return user


def _free_username(claims: dict, user) -> str:
    """The preferred name when no other user holds it, else `oidc:<sub>`: a provider account
    never takes over a local user of the same name."""
    wanted = username_from(claims)
    others = get_user_model().objects.filter(username=wanted)
    if user is not None:
        others = others.exclude(pk=user.pk)
    return fallback_username(subject_of(claims)) if others.exists() else wanted
