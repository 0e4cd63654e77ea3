"""Users with the dashboard's roles, for the role fixtures and the tests of roles."""

# The permission names the tests were written with, and the role group each now stands for.
ROLE_OF = {
    "stage_offsetedit": "Offset editors",
    "approve_offsetedit": "Offset approvers",
    "add_refreshrun": "Refresh operators",
}


def user_with(django_user_model, username, *codenames):
    """Create `username` (password "<username>-password"), a viewer of every cluster, with the
    roles on every cluster that the permission names given stand for."""
    from offsets.rights.roles import VIEWERS_GROUP, ensure_role_groups

    groups = ensure_role_groups()
    user = django_user_model.objects.create_user(username, password=f"{username}-password")
    user.groups.add(groups[VIEWERS_GROUP], *(groups[ROLE_OF[name]] for name in codenames))
    return django_user_model.objects.get(pk=user.pk)  # a fresh object: no stale grants
