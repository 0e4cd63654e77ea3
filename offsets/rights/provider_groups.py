"""The identity provider's groups claim, applied to a user's dashboard groups at each login.

The groups named by a ProviderGroup mapping are the provider's to give: at every login the
user is in exactly those the claim maps to, so leaving a group at the provider removes the
rights it gave at the next login. Groups no mapping names (a break-glass group, a group an
administrator manages by hand) are left as they are.
"""

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from offsets.models import ProviderGroup
from offsets.rights import grants


def claim_values(claims: dict, claim: str) -> list[str]:
    """The values of the groups claim: a list of strings, or one string; anything else none."""
    value = claims.get(claim)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str)]
    return []


@transaction.atomic
def apply_provider_groups(user: AbstractBaseUser, values: Iterable[str]) -> list[str]:
    """Put `user` in the groups the claim values map to, and out of the other mapped groups;
    return the names of the mapped groups the user is now in."""
    mapped = ProviderGroup.objects.select_related("group")
    given = {mapping.group for mapping in mapped if mapping.claim_value in set(values)}
    managed = {mapping.group for mapping in mapped}
    user.groups.remove(*(managed - given))
    user.groups.add(*given)
    grants.forget(user)
    return sorted(group.name for group in given)
