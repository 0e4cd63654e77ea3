"""The arguments the management commands share (--cluster, --user) and their look-ups."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import CommandError, CommandParser

from offsets.models import Cluster

CLUSTER_HELP = "Name of a cluster added with add_cluster"


def add_cluster_argument(parser: CommandParser) -> None:
    parser.add_argument("--cluster", required=True, help=CLUSTER_HELP)


def get_cluster(name: str) -> Cluster:
    """Return the cluster of that name, or stop the command saying how to add it."""
    cluster = Cluster.objects.filter(name=name).first()
    if cluster is None:
        raise CommandError(f"Unknown cluster {name!r}: add it with add_cluster first.")
    return cluster


def get_user(username: str | None) -> AbstractBaseUser | None:
    """Return the user named by --user (None when it is not given), or stop the command."""
    if not username:
        return None
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"Unknown user {username!r}.")
    return user
