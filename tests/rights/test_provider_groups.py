"""The provider's groups claim decides the mapped groups at each login, and only those."""

import pytest
from django.contrib.auth.models import Group

from offsets.models import Grant, ProviderGroup, Role
from offsets.rights.grants import visible_clusters
from offsets.rights.provider_groups import apply_provider_groups, claim_values
from tests.support import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def mapping():
    payments, orders = Group.objects.create(name="payments"), Group.objects.create(name="orders")
    ProviderGroup.objects.create(claim_value="kafka-payments", group=payments)
    ProviderGroup.objects.create(claim_value="/teams/orders", group=orders)
    Grant.objects.create(group=payments, role=Role.EDITOR, cluster=factories.cluster("pay"))
    Grant.objects.create(group=orders, role=Role.VIEWER, cluster=factories.cluster("ord"))
    return payments, orders


def test_a_login_puts_the_user_in_the_mapped_groups_and_out_of_the_others(
    mapping, django_user_model
):
    user = django_user_model.objects.create_user("sso-user")
    assert apply_provider_groups(user, ["kafka-payments", "unmapped"]) == ["payments"]
    assert [c.name for c in visible_clusters(user)] == ["pay"]
    # Removed from kafka-payments at the provider, added to orders: the next login follows.
    assert apply_provider_groups(user, ["/teams/orders"]) == ["orders"]
    assert [c.name for c in visible_clusters(user)] == ["ord"]
    assert apply_provider_groups(user, []) == []
    assert not visible_clusters(user).exists()


def test_groups_no_mapping_names_are_left_alone(mapping, django_user_model):
    break_glass = Group.objects.create(name="break-glass")
    user = django_user_model.objects.create_user("sso-admin")
    user.groups.add(break_glass)
    apply_provider_groups(user, [])
    assert list(user.groups.values_list("name", flat=True)) == ["break-glass"]


@pytest.mark.parametrize(
    ("claims", "values"),
    [
        ({"groups": ["a", "b"]}, ["a", "b"]),
        ({"groups": "a"}, ["a"]),
        ({"groups": ["a", 3, None, {"x": 1}]}, ["a"]),
        ({"groups": {"a": True}}, []),
        ({}, []),
    ],
)
def test_the_claim_is_read_as_strings_only(claims, values):
    assert claim_values(claims, "groups") == values
