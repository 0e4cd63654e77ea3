"""Migration 0025 keeps what today's users could do when grants arrive."""

import pytest

from tests.support.migrations import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("offsets", "0024_grants")]
AFTER = [("offsets", "0025_grant_todays_rights")]


@pytest.fixture(autouse=True)
def _latest_schema_after():
    # The test moves the schema back and forth; the tests after it in this process need
    # every migration applied.
    yield
    migrate_to_latest()


def test_every_user_keeps_seeing_every_cluster_and_keeps_their_roles():
    apps = migrate(BEFORE)
    User = apps.get_model("auth", "User")
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")

    def permission(codename):
        return Permission.objects.get(content_type__app_label="offsets", codename=codename)

    User.objects.create(username="reader")
    direct = User.objects.create(username="direct-refresher")
    direct.user_permissions.add(permission("add_refreshrun"))
    team = Group.objects.create(name="payments-approvers")
    team.permissions.add(permission("approve_offsetedit"), permission("stage_offsetedit"))
    member = User.objects.create(username="member")
    member.groups.add(team)

    apps = migrate(AFTER)

    Grant = apps.get_model("offsets", "Grant")
    User = apps.get_model("auth", "User")

    def roles(username):
        return set(
            Grant.objects.filter(
                group__user__username=username, cluster=None, connectors="*"
            ).values_list("role", flat=True)
        )

    assert roles("reader") == {"viewer"}
    assert roles("direct-refresher") == {"viewer", "refresh"}
    # The group's strongest permission is its role; editor comes with approver's permissions.
    assert roles("member") == {"viewer", "approver", "editor"}
    assert set(User.objects.get(username="member").groups.values_list("name", flat=True)) == {
        "payments-approvers",
        "Offset viewers",
    }
