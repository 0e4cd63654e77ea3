"""The one lookup of a cluster for a user, shared by the pages and the API."""

from collections.abc import Callable
from dataclasses import replace

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import Http404
from django.shortcuts import get_object_or_404

from offsets.connect_state import ConnectState
from offsets.models import Cluster
from offsets.rights.grants import sees_connector, sees_every_connector, visible_clusters


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
        raise Http404(f"No connector named {name!r} on {cluster.name} (as of the last refresh).")


def exported_connectors(
    user: AbstractBaseUser | AnonymousUser, cluster: Cluster
) -> Callable[[str], bool] | None:
    """Which connectors an export of "all" keeps for `user`: None for every one."""
    if sees_every_connector(user, cluster):
        return None
    return lambda name: sees_connector(user, cluster, name)


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
