"""Who may stage and who may approve: the two roles of the edit workflow, on a cluster (and a
connector) by the user's grants (offsets.rights)."""

from offsets.domain.rights import Action
from offsets.models import Cluster
from offsets.rights import gate
from offsets.rights.grants import edit_clusters, may


def can_stage(user, cluster: Cluster, connector: object = None) -> bool:
    return may(user, Action.STAGE, cluster, connector)


def can_approve(user, cluster: Cluster, connector: object = None) -> bool:
    return may(user, Action.APPROVE, cluster, connector)


def can_control_connectors(user, cluster: Cluster, connector: object = None) -> bool:
    """Stop, resume and restart connectors: editors (who stop to edit) and approvers."""
    return may(user, Action.CONTROL, cluster, connector)


def approves(user, edit) -> bool:
    """Whether `user` may approve and apply `edit`: on its connector, and for a move on the
    target cluster too (`rights.grants.edit_clusters`)."""
    return all(can_approve(user, cluster, edit.connector) for cluster in edit_clusters(edit))


def require_sight(user, edit) -> None:
    """The gate for any step of `edit`: 404 unless `user` sees its connector on each of its
    clusters (`rights.grants.sees_edit`)."""
    for cluster in edit_clusters(edit):
        gate.admit(user, Action.VIEW, cluster, edit.connector)


def require_approver(user, edit, message: str) -> None:
    """The gate for approving and applying `edit`, on each of its clusters: 404 where `user`
    does not see the connector, else 403 (`message`)."""
    for cluster in edit_clusters(edit):
        gate.admit(user, Action.APPROVE, cluster, edit.connector, message=message)
