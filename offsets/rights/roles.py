"""The dashboard's roles on every cluster as groups, so every deployment grants them the same
way: put people in a group (admin), or grant a group a role on some clusters only (Grants)."""

from django.contrib.auth.models import Group

from offsets.models import Grant, Role

VIEWERS_GROUP = "Offset viewers"
EDITORS_GROUP = "Offset editors"
APPROVERS_GROUP = "Offset approvers"
REFRESHERS_GROUP = "Refresh operators"
RECORD_VIEWERS_GROUP = "Record viewers"
# Each group's role, on every cluster (those added later included) and every connector.
ROLE_GROUPS = {
    VIEWERS_GROUP: Role.VIEWER,
    EDITORS_GROUP: Role.EDITOR,
    APPROVERS_GROUP: Role.APPROVER,
    REFRESHERS_GROUP: Role.REFRESH,
    RECORD_VIEWERS_GROUP: Role.RECORDS,
}


def ensure_role_groups() -> dict[str, Group]:
    """Create (or refresh) the role groups, each with its grant on every cluster."""
    groups = {}
    for name, role in ROLE_GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        Grant.objects.get_or_create(group=group, role=role, cluster=None, connectors="*")
        groups[name] = group
    return groups
