"""The grants of a user, read once per request, and the questions the pages and API ask.

Superusers see and may do everything; an inactive or anonymous user nothing; everyone else
what the grants of their groups allow (offsets.rights.rules).
"""

from collections.abc import Callable, Iterable

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from offsets.models import Cluster, Grant
from offsets.rights import rules
from offsets.rights.rules import Action, GrantRule

User = AbstractBaseUser | AnonymousUser

# The user object carries its grants for the rest of the request (a page asks many times).
_CACHE = "_offsets_grants"


def _active(user: User | None) -> bool:
    return bool(user and user.is_authenticated and user.is_active)


def grants_of(user: User | None) -> tuple[GrantRule, ...]:
    if not _active(user):
        return ()
    cached = getattr(user, _CACHE, None)
    if cached is None:
        cached = tuple(
            GrantRule(role=role, cluster_id=cluster_id, connectors=connectors)
            for role, cluster_id, connectors in Grant.objects.filter(group__user=user).values_list(
                "role", "cluster_id", "connectors"
            )
        )
        setattr(user, _CACHE, cached)
    return cached


def forget(user: User) -> None:
    """Drop the grants read for `user` (its groups just changed)."""
    if hasattr(user, _CACHE):
        delattr(user, _CACHE)


def may(user: User | None, action: Action, cluster: Cluster, connector: object = None) -> bool:
    """Whether `user` may do `action` on `cluster` (see rules.allows for `connector`)."""
    if not _active(user):
        return False
    if user.is_superuser:
        return True
    return rules.allows(grants_of(user), action, cluster.pk, connector)


def visible_clusters(user: User | None) -> QuerySet[Cluster]:
    if not _active(user):
        return Cluster.objects.none()
    if user.is_superuser:
        return Cluster.objects.all()
    ids = rules.visible_cluster_ids(grants_of(user))
    return Cluster.objects.all() if ids is None else Cluster.objects.filter(pk__in=ids)


def has_any_grant(user: User | None) -> bool:
    return _active(user) and (user.is_superuser or bool(grants_of(user)))


def sees_every_connector(user: User | None, cluster: Cluster) -> bool:
    return may(user, Action.VIEW, cluster, rules.WHOLE_CLUSTER)


def sees_connector(user: User | None, cluster: Cluster, name: str) -> bool:
    return may(user, Action.VIEW, cluster, name)


def only_visible[T](
    user: User | None, cluster: Cluster, items: Iterable[T], connector_of: Callable[[T], str]
) -> list[T]:
    """The items (edits, audit events) about connectors `user` sees on `cluster`; an item about
    no connector (the cluster as a whole) only for those who see every connector."""
    if sees_every_connector(user, cluster):
        return list(items)
    return [
        item
        for item in items
        if connector_of(item) and sees_connector(user, cluster, connector_of(item))
    ]


def connector_filter(user: User | None, cluster: Cluster, field: str = "name") -> Q | None:
    """A filter keeping the connectors `user` sees on `cluster` (by `field`, their name), for
    the lists read from the database; None when they see every connector."""
    if sees_every_connector(user, cluster):
        return None
    globs = rules.viewing_globs(grants_of(user), cluster.pk)
    keep = Q(pk__in=[])
    for glob in globs:
        keep |= Q(**{f"{field}__regex": rules.glob_regex(glob)})
    return keep
