"""The grants of a user, read once per request, and the questions the pages and API ask.

Superusers see and may do everything; an inactive or anonymous user nothing; everyone else
what the grants of their groups allow (offsets.domain.rights).
"""

from collections.abc import Callable, Iterable

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from offsets.domain import rights as rules
from offsets.domain.rights import Action, GrantRule
from offsets.models import Cluster, Grant

User = AbstractBaseUser | AnonymousUser

# The user object carries its grants for the rest of the request (a page asks many times).
_CACHE = "_offsets_grants"


class ShellOperator(AnonymousUser):
    """Whoever runs a management command without --user at the server's shell: they can read
    the database and the client settings already, so they are trusted like a superuser. Only
    the commands pass it; a request never holds it."""

    is_superuser = True
    username = "the server's shell"

    @property
    def is_authenticated(self) -> bool:  # type: ignore[override]
        return True

    @property
    def is_active(self) -> bool:  # type: ignore[override]
        return True


SHELL_OPERATOR = ShellOperator()


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


def sees_every_cluster(user: User | None) -> bool:
    """Whether `user` sees every cluster, those added later (or not registered) included."""
    if not _active(user):
        return False
    return user.is_superuser or rules.visible_cluster_ids(grants_of(user)) is None


def has_any_grant(user: User | None) -> bool:
    return _active(user) and (user.is_superuser or bool(grants_of(user)))


def sees_every_connector(user: User | None, cluster: Cluster) -> bool:
    return may(user, Action.VIEW, cluster, rules.WHOLE_CLUSTER)


def sees_connector(user: User | None, cluster: Cluster, name: str) -> bool:
    return may(user, Action.VIEW, cluster, name)


def edit_clusters(edit) -> list[Cluster]:
    """The clusters an edit is about: its own, and for a move its target too (a move names its
    target, its offsets topic and what the target holds). Rights on an edit hold on each."""
    return [edit.cluster] if edit.target_cluster_id is None else [edit.cluster, edit.target_cluster]


def sees_edit(user: User | None, edit) -> bool:
    """Whether `user` sees `edit`: its connector on each of its clusters (`edit_clusters`)."""
    return all(sees_connector(user, cluster, edit.connector) for cluster in edit_clusters(edit))


def only_visible_edits(user: User | None, edits: Iterable) -> list:
    """The edits that `user` sees (`sees_edit`)."""
    return [edit for edit in edits if sees_edit(user, edit)]


def only_visible_events(user: User | None, cluster: Cluster, events: Iterable) -> list:
    """The audit events of `cluster` that `user` sees: by their connector, and by their edit's
    target cluster for a move."""
    return [
        event
        for event in only_visible(user, cluster, events, _connector)
        if event.edit_id is None or sees_edit(user, event.edit)
    ]


def _connector(item) -> str:
    return item.connector


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
