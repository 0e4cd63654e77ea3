"""The rules of grants: which role allows what, where, on which connectors."""

import pytest

from offsets.domain.rights import (
    WHOLE_CLUSTER,
    Action,
    GrantRule,
    allows,
    sees_every_connector,
    visible_cluster_ids,
)

A, B = 1, 2


@pytest.mark.parametrize(
    ("role", "allowed"),
    [
        ("viewer", {Action.VIEW}),
        ("editor", {Action.VIEW, Action.STAGE, Action.CONTROL}),
        ("approver", {Action.VIEW, Action.STAGE, Action.APPROVE, Action.CONTROL}),
        ("refresh", {Action.VIEW, Action.REFRESH}),
        ("records", {Action.VIEW, Action.READ_RECORDS}),
        ("admin", set(Action)),
    ],
)
def test_each_role_allows_its_actions_and_no_other(role, allowed):
    grants = [GrantRule(role, A)]
    assert {action for action in Action if allows(grants, action, A, "any")} == allowed


def test_a_grant_on_one_cluster_allows_nothing_on_another():
    grants = [GrantRule("admin", A)]
    assert not any(allows(grants, action, B) for action in Action)
    assert visible_cluster_ids(grants) == {A}


def test_a_grant_on_every_cluster_covers_clusters_added_later():
    grants = [GrantRule("viewer", None)]
    assert allows(grants, Action.VIEW, 999, "x")
    assert visible_cluster_ids(grants) is None


def test_a_connector_glob_limits_the_role_to_the_matching_connectors():
    grants = [GrantRule("editor", A, "payments-*"), GrantRule("viewer", A)]
    assert allows(grants, Action.STAGE, A, "payments-sink")
    assert not allows(grants, Action.STAGE, A, "orders-sink")
    assert allows(grants, Action.VIEW, A, "orders-sink")
    # Somewhere in the cluster (a button leading to a form), but not the cluster as a whole.
    assert allows(grants, Action.STAGE, A)
    assert not allows(grants, Action.STAGE, A, WHOLE_CLUSTER)


def test_globs_match_case_and_every_character_exactly():
    grants = [GrantRule("viewer", A, "pay?-a.[b]*")]
    assert allows(grants, Action.VIEW, A, "pays-a.[b]1")
    assert not allows(grants, Action.VIEW, A, "PAYS-a.[b]1")
    # "." and "[" are themselves, not a regular expression's or a bracket glob's.
    assert not allows(grants, Action.VIEW, A, "pays-aX[b]1")
    assert not allows(grants, Action.VIEW, A, "pays-a.b1")
    assert allows(grants, Action.VIEW, A, "pays-a.[b]1\nmore")  # "*" spans a line break
    assert not allows(grants, Action.VIEW, A, "pays-a.[b")


def test_who_sees_every_connector():
    assert sees_every_connector([GrantRule("viewer", A)], A)
    assert not sees_every_connector([GrantRule("admin", A, "team-a-*")], A)
    assert not sees_every_connector([GrantRule("viewer", B)], A)


def test_no_grant_allows_nothing_and_an_unknown_role_nothing_either():
    assert not allows([], Action.VIEW, A)
    assert not allows([GrantRule("owner", A)], Action.VIEW, A)
    assert visible_cluster_ids([]) == set()


def test_every_glob_matches_names_with_line_breaks_whole():
    assert allows([GrantRule("viewer", A, "line*")], Action.VIEW, A, "line\r\nbreak")
    assert allows([GrantRule("viewer", A, "*")], Action.VIEW, A, "line\r\nbreak")
    assert not allows([GrantRule("viewer", A, "line?break")], Action.VIEW, A, "line\r\nbreak")
    assert not allows([GrantRule("viewer", A, "line")], Action.VIEW, A, "line\n")
