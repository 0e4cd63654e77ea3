"""Who may stage and who may approve: the two roles of the edit workflow, on a cluster (and a
connector) by the user's grants (offsets.rights)."""

from offsets.models import Cluster
from offsets.rights import gate
from offsets.rights.grants import may
from offsets.rights.rules import Action


def can_stage(user, cluster: Cluster, connector: object = None) -> bool:
    return may(user, Action.STAGE, cluster, connector)


def can_approve(user, cluster: Cluster, connector: object = None) -> bool:
    return may(user, Action.APPROVE, cluster, connector)


def can_control_connectors(user, cluster: Cluster, connector: object = None) -> bool:
    """Stop, resume and restart connectors: editors (who stop to edit) and approvers."""
    return may(user, Action.CONTROL, cluster, connector)


def approves(user, edit) -> bool:
    """Whether `user` may approve and apply `edit`: on its connector, and for a move on the
    target cluster too."""
    if not can_approve(user, edit.cluster, edit.connector):
        return False
    return edit.target_cluster_id is None or can_approve(user, edit.target_cluster, edit.connector)


def require_sight(user, edit) -> None:
    """The gate for any step of `edit`: 404 unless `user` sees its connector (and for a move,
    the same connector on the target cluster: `rights.grants.sees_edit`)."""
    gate.admit(user, Action.VIEW, edit.cluster, edit.connector)
    if edit.target_cluster_id is not None:
        gate.admit(user, Action.VIEW, edit.target_cluster, edit.connector)


def require_approver(user, edit, message: str) -> None:
    """The gate for approving and applying `edit`: on its connector, and for a move on the
    target cluster too; 404 where `user` does not see the connector, else 403 (`message`)."""
    gate.admit(user, Action.APPROVE, edit.cluster, edit.connector, message=message)
    if edit.target_cluster_id is not None:
        gate.admit(user, Action.APPROVE, edit.target_cluster, edit.connector, message=message)
