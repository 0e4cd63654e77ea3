"""The one lookup of a cluster for a user, shared by the pages and the API."""

from collections.abc import Iterable
from dataclasses import replace

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import Http404
from django.shortcuts import get_object_or_404

from offsets.connect_state import ConnectState
from offsets.models import Cluster
from offsets.rights import gate
from offsets.rights.grants import (
    sees_connector,
    sees_every_cluster,
    sees_every_connector,
    visible_clusters,
)


def cluster_for_user(
    *, user: AbstractBaseUser | AnonymousUser, name: str, connector: str | None = None
) -> Cluster:
    """Return the cluster named `name` that `user` may see; Http404 if there is none, or if
    `connector` is given and the user's grants do not cover it.

    A cluster without a grant answers exactly as a cluster that does not exist, so that a user
    does not learn it exists. What the user may do there is checked by the services (viewers
    see, editors stage, approvers apply). The API answers Django's Http404 as its own 404
    (`{"detail": ...}`).
    """
    cluster = get_object_or_404(visible_clusters(user), name=name)
    if connector is not None:
        require_connector(user, cluster, connector)
    return cluster


def require_connector(user: AbstractBaseUser | AnonymousUser, cluster: Cluster, name: str) -> None:
    """Http404, word for word that of a connector that does not exist, unless the user's grants
    cover connector `name` of `cluster`."""
    if not sees_connector(user, cluster, name):
        raise Http404(gate.unknown_connector(cluster, name))


def state_for_user(
    user: AbstractBaseUser | AnonymousUser, cluster: Cluster, state: ConnectState
) -> ConnectState:
    """The live state with only the connectors `user` sees; for a user who does not see every
    connector, without the malformed records' examples either (they may name any connector)."""
    if sees_every_connector(user, cluster):
        return state
    return replace(
        state,
        connectors=[c for c in state.connectors if sees_connector(user, cluster, c.name)],
        config_examples={},
        status_examples={},
    )


# What a mirror's snapshot says of its upstream cluster: its name, and its lag behind it.
UPSTREAM_FIELDS = {
    "upstream_cluster": "",
    "upstream_error": "",
    "lag_records": None,
    "lag_ms": None,
    "lag_status": None,
    "uncommitted_partitions": 0,
}


def unseen_upstreams(user: AbstractBaseUser | AnonymousUser, rows: Iterable) -> set[str]:
    """The upstream clusters named by `rows` (mirrors' snapshots) that `user` does not see."""
    if sees_every_cluster(user):
        return set()
    named = {row.upstream_cluster for row in rows if row.upstream_cluster}
    if not named:
        return set()
    return named - set(visible_clusters(user).filter(name__in=named).values_list("name", flat=True))


def hide_unseen_upstreams[T](user: AbstractBaseUser | AnonymousUser, rows: list[T]) -> list[T]:
    """`rows` with each mirror whose upstream cluster `user` does not see told nothing of it:
    the upstream's name and the lag measured there are blanked, `upstream_hidden` set. The
    lag is the upstream's data (its topics' ends), which a grant there alone shows."""
    hidden = unseen_upstreams(user, rows)
    for row in rows:
        row.upstream_hidden = False
        if row.upstream_cluster in hidden:
            hide_upstream(row)
    return rows


def hide_upstream(row) -> None:
    """Blank what `row` (a mirror's snapshot) says of its upstream cluster."""
    for field, blank in UPSTREAM_FIELDS.items():
        setattr(row, field, blank)
    row.upstream_hidden = True
