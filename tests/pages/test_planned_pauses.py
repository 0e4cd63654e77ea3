"""A planned pause is never an error: the rule (offsets.domain.pauses), the list's status
filter, the overview's counts and the API say the same as the list's badge."""

import itertools

import pytest

from offsets.domain import pauses
from offsets.models import ConnectorSnapshot
from offsets.queries import snapshots
from offsets.queries.snapshots.choices import PLANNED_PAUSE
from tests.support import factories as make

URL = "/clusters/prod/connectors/"


@pytest.mark.parametrize(
    ("target_state", "deleted", "failed", "paused"),
    [
        ("PAUSED", False, False, True),
        ("STOPPED", False, False, True),
        ("STARTED", False, False, False),
        ("", False, False, False),
        ("PAUSED", True, False, False),  # deleted: its config is gone, no owner's pause
        ("PAUSED", False, True, False),  # a failure in it is still a failure
    ],
)
def test_the_rule_says_who_its_owner_paused(target_state, deleted, failed, paused):
    assert (
        pauses.paused_by_owner(target_state=target_state, deleted=deleted, failed=failed) is paused
    )


def test_a_paused_connector_is_shown_paused_and_is_never_a_lag_error():
    assert pauses.shown_status("ERR", paused=True) == "PAUSED"
    assert pauses.shown_status("OK", paused=True) == "PAUSED"
    assert pauses.shown_status("ERR", paused=False) == "ERR"
    assert not pauses.is_lag_error("ERR", paused=True)
    assert pauses.is_lag_error("ERR", paused=False)
    assert pauses.is_lag_error("STOP", paused=False)
    assert not pauses.is_lag_error("WARN", paused=False)
    assert pauses.shown_reasons(["STOP", "REWIND"], paused=True) == ["REWIND"]
    assert pauses.shown_reasons(["STOP", "REWIND"], paused=False) == ["STOP", "REWIND"]


@pytest.mark.django_db
def test_the_database_filter_answers_as_the_rule_for_every_combination():
    cluster = make.cluster("prod")
    combinations = itertools.product(
        ("PAUSED", "STOPPED", "STARTED", ""),
        ("RUNNING", "PAUSED", "STOPPED", "FAILED"),
        (False, True),  # deleted
        ({"0": "RUNNING"}, {"0": "FAILED"}),
    )
    for index, (target, runtime, deleted, tasks) in enumerate(combinations):
        make.snapshot(
            cluster,
            f"c{index}",
            target_state=target,
            runtime_state=runtime,
            deleted=deleted,
            task_states=tasks,
        )
    by_rule = {row.name for row in ConnectorSnapshot.objects.all() if row.paused_by_owner}
    by_filter = set(ConnectorSnapshot.objects.filter(PLANNED_PAUSE).values_list("name", flat=True))
    assert by_filter == by_rule
    assert len(by_rule) == 6  # target PAUSED or STOPPED, not deleted, nothing FAILED


@pytest.fixture
def prod(db):
    cluster = make.cluster("prod")
    make.run(cluster)
    make.snapshot(cluster, "orders-sink", "sink", lag_records=9, lag_status="ERR")
    make.sink_lags(cluster, "orders-sink", "orders", 1, status="STOP")
    for name, state in (("clicks-sink", "PAUSED"), ("mirror-sink", "STOPPED")):
        make.snapshot(
            cluster,
            name,
            "sink",
            runtime_state=state,
            target_state=state,
            lag_records=40,
            lag_status="ERR",
        )
        make.sink_lags(cluster, name, "clicks", 1, status="STOP")
    make.snapshot(
        cluster,
        "held-warn",
        "sink",
        runtime_state="PAUSED",
        target_state="PAUSED",
        lag_status="WARN",
    )
    make.snapshot(
        cluster,
        "paused-but-failed",
        "sink",
        runtime_state="PAUSED",
        target_state="PAUSED",
        task_states={"0": "FAILED"},
        lag_status="ERR",
    )
    make.snapshot(cluster, "calm-sink", "sink")
    return cluster


def listed(client, query: str) -> list[str]:
    html = client.get(URL + query).content.decode()
    return sorted(part.split('"')[0] for part in html.split('<tr data-connector="')[1:])


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?status=ERR", ["orders-sink", "paused-but-failed"]),
        ("?status=STOP", ["orders-sink"]),
        ("?status=WARN", []),
        ("?status=OK", ["calm-sink"]),
        ("?status=PAUSED", ["clicks-sink", "held-warn", "mirror-sink"]),
    ],
)
def test_the_status_filter_lists_what_the_badges_say(logged_in_client, prod, query, expected):
    assert listed(logged_in_client, query) == expected


def test_every_connector_the_err_filter_lists_is_badged_err(logged_in_client, prod):
    html = logged_in_client.get(URL + "?status=ERR").content.decode()
    for row in html.split('<tr data-connector="')[1:]:
        status = row.split('data-field="status"')[1].split("</td>")[0]
        assert 'data-status="ERR"' in status and 'data-status="paused"' not in status


def test_the_filter_offers_paused(logged_in_client, prod):
    html = logged_in_client.get(URL).content.decode()
    assert '<option value="PAUSED">PAUSED</option>' in html


def test_the_overview_s_worst_status_leaves_planned_pauses_out(logged_in_client, db):
    cluster = make.cluster("calm")
    make.run(cluster)
    make.snapshot(cluster, "fine", "sink", lag_status="WARN")
    make.snapshot(
        cluster, "held", "sink", runtime_state="PAUSED", target_state="PAUSED", lag_status="ERR"
    )
    [summary] = snapshots.cluster_summaries()
    assert summary.worst_lag_status == "WARN"
    assert summary.problems == 1  # the WARN one; the pause is none
    html = logged_in_client.get("/").content.decode()
    row = html.split('data-cluster="calm"')[1].split("</tr>")[0]
    assert 'data-status="WARN"' in row and 'data-status="ERR"' not in row


def test_a_cluster_only_paused_says_paused_as_its_worst_status(logged_in_client, db):
    cluster = make.cluster("held")
    make.run(cluster)
    make.snapshot(
        cluster, "held", "sink", runtime_state="STOPPED", target_state="STOPPED", lag_status="ERR"
    )
    html = logged_in_client.get("/").content.decode()
    row = html.split('data-cluster="held"')[1].split("</tr>")[0]
    assert 'data-field="worst-status">worst lag <span class="status status-paused"' in row


def test_the_api_filters_and_says_paused_alike(logged_in_client, prod):
    api = "/api/v1/clusters/prod/connectors/"
    found = logged_in_client.get(api + "?status=ERR").json()["connectors"]
    assert sorted(row["name"] for row in found) == ["orders-sink", "paused-but-failed"]
    paused = logged_in_client.get(api + "?status=PAUSED").json()["connectors"]
    assert {row["name"]: row["paused_by_owner"] for row in paused} == {
        "clicks-sink": True,
        "held-warn": True,
        "mirror-sink": True,
    }
    # Its stopped partitions are its pause, not a reason.
    assert {row["name"]: row["status_reasons"] for row in paused}["clicks-sink"] == []
