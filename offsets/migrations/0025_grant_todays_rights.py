"""Existing installations keep working: today's users keep what they could do.

Before grants, every logged-in user saw every cluster, and the roles were Django permissions
(stage_offsetedit: editor, approve_offsetedit: approver, add_refreshrun: refresh operator) on
users or groups. Every existing user joins "Offset viewers"; a group with a role's permission
gets that role on every cluster; a user with one directly joins the role's group.
"""

from django.conf import settings
from django.db import migrations

ROLE_GROUPS = {
    "viewer": "Offset viewers",
    "editor": "Offset editors",
    "approver": "Offset approvers",
    "refresh": "Refresh operators",
}
# The strongest role a permission meant, in the order they are looked at.
PERMISSION_ROLES = [
    ("approve_offsetedit", "approver"),
    ("stage_offsetedit", "editor"),
    ("add_refreshrun", "refresh"),
]


def grant_todays_rights(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    User = apps.get_model(settings.AUTH_USER_MODEL)
    Grant = apps.get_model("offsets", "Grant")
    role_groups = {}
    for role, name in ROLE_GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        Grant.objects.get_or_create(group=group, role=role, cluster=None, connectors="*")
        role_groups[role] = group
    for user in User.objects.all():
        user.groups.add(role_groups["viewer"])
    for codename, role in PERMISSION_ROLES:
        for group in Group.objects.filter(permissions__codename=codename):
            Grant.objects.get_or_create(group=group, role=role, cluster=None, connectors="*")
        for user in User.objects.filter(user_permissions__codename=codename):
            user.groups.add(role_groups[role])


class Migration(migrations.Migration):
    dependencies = [
        ("offsets", "0024_grants"),
        ("auth", "0012_alter_user_first_name_max_length"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(grant_todays_rights, migrations.RunPython.noop)]
