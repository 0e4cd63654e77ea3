"""The one lookup of a cluster for a user, shared by the pages and the API."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.shortcuts import get_object_or_404

from offsets.models import Cluster


def cluster_for_user(*, user: AbstractBaseUser | AnonymousUser, name: str) -> Cluster:
    """Return the cluster named `name` that `user` may see; Http404 if there is none.

    Every logged-in user sees every cluster; what they may do there is the roles' business,
    checked by the services (viewers see, editors stage, approvers apply). Per-cluster rights
    (issue 49) are checked here, so that the pages and the API refuse the same clusters. The
    API answers Django's Http404 as its own 404 (`{"detail": ...}`).
    """
    return get_object_or_404(Cluster, name=name)
