"""The one lookup of a cluster for a user, shared by the pages and the API."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import Http404
from django.shortcuts import get_object_or_404

from offsets.models import Cluster
from offsets.rights.grants import sees_connector, visible_clusters


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
    if connector is not None and not sees_connector(user, cluster, connector):
        # Word for word the 404 of a connector that does not exist.
        raise Http404(
            f"No connector named {connector!r} on {cluster.name} (as of the last refresh)."
        )
    return cluster
