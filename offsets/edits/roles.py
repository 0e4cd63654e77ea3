"""Who may stage and who may approve: the two roles of the edit workflow."""

STAGE_PERMISSION = "offsets.stage_offsetedit"
APPROVE_PERMISSION = "offsets.approve_offsetedit"


def can_stage(user) -> bool:
    return bool(user and user.is_active and user.has_perm(STAGE_PERMISSION))


def can_approve(user) -> bool:
    return bool(user and user.is_active and user.has_perm(APPROVE_PERMISSION))


def can_control_connectors(user) -> bool:
    """Stop, resume and restart connectors: editors (who stop to edit) and approvers."""
    return can_stage(user) or can_approve(user)
