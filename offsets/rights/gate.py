"""The one gate: may this user do this on this cluster's connector? Asked by every service entry
point that reads or writes a connector's data, before it reads anything.

The answer comes from one place, `grants.may` (the user's grants, `rules.allows`). A refusal
says nothing the user may not know: a cluster they do not see answers as an unknown cluster
does, a connector outside their grants as an unknown connector does (the same 404, word for
word), and only where they see the connector does a missing role answer 403.
"""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from offsets.domain.rights import WHOLE_CLUSTER, Action
from offsets.models import Cluster
from offsets.rights.grants import may

User = AbstractBaseUser | AnonymousUser

ROLE_NEEDED = {
    Action.VIEW: "This needs the viewer role.",
    Action.STAGE: "Staging offset edits needs the editor role.",
    Action.APPROVE: "Approving and applying edits needs the approver role.",
    Action.CONTROL: "Stopping, resuming and restarting connectors needs the editor role.",
    Action.REFRESH: "Starting a refresh needs the refresh operator role on the whole cluster.",
    Action.READ_RECORDS: "Seeing records' contents needs the record viewer role.",
}


class Refused(Exception):
    """A service's refusal, shown to people; `http_status` is the answer's status and `field`
    the input at fault (the edit workflow's errors are refusals too)."""

    http_status: int = 400

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class NotFound(Refused):
    """A cluster or connector the user does not see: answered as one that does not exist."""

    http_status = 404


class Forbidden(Refused):
    """The user sees the connector but lacks the role."""

    http_status = 403


def unknown_cluster(name: str) -> str:
    """What a cluster that does not exist, or that the user does not see, answers."""
    return f"No cluster {name!r}."


def unknown_connector(cluster: Cluster, name: str) -> str:
    """What a connector that does not exist, or that the user does not see, answers."""
    return f"No connector named {name!r} on {cluster.name}."


def admit(
    user: User | None,
    action: Action,
    cluster: Cluster,
    connector: object = WHOLE_CLUSTER,
    *,
    message: str | None = None,
) -> None:
    """Raise NotFound or Forbidden unless `user` may do `action` on `connector` of `cluster`
    (a name, WHOLE_CLUSTER, or None for "somewhere in it"). `message` replaces the role's
    403 text."""
    if may(user, action, cluster, connector):
        return
    if not may(user, Action.VIEW, cluster):
        raise NotFound(unknown_cluster(cluster.name))
    if isinstance(connector, str) and not may(user, Action.VIEW, cluster, connector):
        raise NotFound(unknown_connector(cluster, connector), field="connector")
    raise Forbidden(message or ROLE_NEEDED[action])


def admit_all(user: User | None, action: Action, cluster: Cluster, names: list[str]) -> None:
    """`admit` for each name in order: a list naming any connector outside the grants is refused
    whole, before anything is read, so the answer says nothing of which names exist."""
    for name in names:
        admit(user, action, cluster, name)
