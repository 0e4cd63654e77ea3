"""The offset-edit roles as groups, so every deployment grants them the same way (admin)."""

from django.contrib.auth.models import Group, Permission

EDITORS_GROUP = "Offset editors"
APPROVERS_GROUP = "Offset approvers"
ROLE_PERMISSIONS = {
    EDITORS_GROUP: ["stage_offsetedit"],
    APPROVERS_GROUP: ["stage_offsetedit", "approve_offsetedit"],
}


def ensure_role_groups() -> dict[str, Group]:
    """Create (or refresh) the editor and approver groups with their permissions."""
    groups = {}
    for name, codenames in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.set(
            Permission.objects.filter(content_type__app_label="offsets", codename__in=codenames)
        )
        groups[name] = group
    return groups
