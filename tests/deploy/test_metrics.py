"""GET /metrics: who may read it, and the series it builds from stored results (no broker)."""

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from offsets.models import CommitBucket, ConnectorSnapshot, RefreshRun
from offsets.queries.metrics import COMMIT_RATE_BUCKETS, commit_rate_window
from tests.support import factories as make
from tests.support.edits_factory import make_edit
from tests.support.metrics_text import TOKEN, samples, scrape, series, value

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(settings):
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_ADDRESSES = []


@pytest.fixture
def prod():
    cluster = make.cluster("prod")
    make.run(cluster, ago=120, seconds=12.5, records_read=4321)
    return cluster


# --- Access -------------------------------------------------------------------------------


def test_it_is_closed_by_default_and_says_how_to_open_it(client, settings):
    assert settings.METRICS_TOKEN == "" and settings.METRICS_ALLOWED_ADDRESSES == []
    response = client.get("/metrics")
    assert response.status_code == 403
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert "METRICS_TOKEN" in text and "METRICS_ALLOWED_ADDRESSES" in text
    # Not even a token opens it while none is configured.
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 403


def test_a_token_sent_where_only_addresses_are_configured_is_a_bad_request(client, settings):
    settings.METRICS_ALLOWED_ADDRESSES = ["10.0.0.0/8"]
    response = client.get("/metrics", REMOTE_ADDR="10.0.0.1", HTTP_AUTHORIZATION="Bearer x")
    assert response.status_code == 400
    assert "METRICS_TOKEN is not set" in response.content.decode()


def test_it_needs_the_token_when_one_is_set(client, token):
    response = client.get("/metrics")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert "Authorization: Bearer" in response.content.decode()
    assert "kafka_connect_offsets" not in response.content.decode()


def test_it_refuses_a_wrong_token_with_401(client, token):
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    assert "not METRICS_TOKEN" in response.content.decode()
    # A prefix of the right token is as wrong as any other.
    prefix = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN[:-1]}")
    assert prefix.status_code == 401


@pytest.mark.parametrize(
    "header", [f"Token {TOKEN}", f"Basic {TOKEN}", "Bearer", f"Bearer {TOKEN} extra", TOKEN]
)
def test_it_refuses_a_malformed_authorization_header_saying_what_it_wants(client, token, header):
    response = client.get("/metrics", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer error="invalid_request"'
    assert "Bearer <METRICS_TOKEN>" in response.content.decode()


def test_it_serves_the_text_format_for_the_right_token(client, token, prod):
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "no-cache" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]
    assert value(samples(response.content.decode()), "refresh_running", cluster="prod") == 0


def test_a_non_ascii_token_is_refused_not_an_error(client, token):
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer tökén")
    assert response.status_code == 401


@pytest.mark.parametrize(
    ("allowed", "address"),
    [
        (["192.0.2.7"], "192.0.2.7"),
        (["10.0.0.0/8"], "10.20.30.40"),
        (["192.0.2.7", "2001:db8::/32"], "2001:db8::42"),
        (["10.0.0.0/8"], "::ffff:10.0.0.1"),
    ],
)
def test_it_serves_an_allowed_address_without_a_token(client, settings, prod, allowed, address):
    settings.METRICS_ALLOWED_ADDRESSES = allowed
    response = client.get("/metrics", REMOTE_ADDR=address)
    assert response.status_code == 200
    assert value(samples(response.content.decode()), "refresh_running", cluster="prod") == 0


@pytest.mark.parametrize("address", ["11.0.0.1", "192.0.2.8", "2001:db9::1", "127.0.0.1"])
def test_it_refuses_an_address_outside_the_allowed_networks(client, settings, address):
    settings.METRICS_ALLOWED_ADDRESSES = ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32"]
    response = client.get("/metrics", REMOTE_ADDR=address)
    assert response.status_code == 403
    assert f"not open to {address}" in response.content.decode()


def test_an_allowed_address_still_may_not_send_a_wrong_token(client, settings):
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_ADDRESSES = ["10.0.0.0/8"]
    assert client.get("/metrics", REMOTE_ADDR="10.0.0.1").status_code == 200
    wrong = client.get("/metrics", REMOTE_ADDR="10.0.0.1", HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.status_code == 401
    # With a token configured, a caller outside the networks is asked for it.
    outside = client.get("/metrics", REMOTE_ADDR="11.0.0.1")
    assert outside.status_code == 401 and outside["WWW-Authenticate"] == "Bearer"


def test_it_answers_get_only(client, token):
    response = client.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"
    assert "GET only" in response.content.decode()


def test_a_logged_in_user_without_the_token_is_refused(logged_in_client, token):
    assert logged_in_client.get("/metrics").status_code == 401


def test_bad_allowed_addresses_fail_loudly(monkeypatch):
    from dashboard.settings import envnetworks

    monkeypatch.setenv("METRICS_ALLOWED_ADDRESSES", "10.0.0.0/8, 10.1.2.3/8")
    with pytest.raises(ImproperlyConfigured, match=r"10\.1\.2\.3/8"):
        envnetworks("METRICS_ALLOWED_ADDRESSES", "")
    monkeypatch.setenv("METRICS_ALLOWED_ADDRESSES", "intranet")
    with pytest.raises(ImproperlyConfigured, match="intranet"):
        envnetworks("METRICS_ALLOWED_ADDRESSES", "")
    monkeypatch.setenv("METRICS_ALLOWED_ADDRESSES", " 10.0.0.0/8 ,2001:db8::/32,")
    assert envnetworks("METRICS_ALLOWED_ADDRESSES", "") == ["10.0.0.0/8", "2001:db8::/32"]


def load_settings(**env: str) -> subprocess.CompletedProcess:
    """Import dashboard.settings in a fresh interpreter with these environment variables."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import dashboard.settings as s; print(s.METRICS_ALLOWED_ADDRESSES)",
        ],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_short_token_or_a_bad_network_stops_the_app_at_start_up():
    short = load_settings(METRICS_TOKEN="short")
    assert short.returncode != 0
    assert "METRICS_TOKEN must be at least 16 characters" in short.stderr
    bad = load_settings(METRICS_ALLOWED_ADDRESSES="10.0.0.0/33")
    assert bad.returncode != 0
    assert "METRICS_ALLOWED_ADDRESSES must list IP addresses" in bad.stderr
    good = load_settings(METRICS_TOKEN=TOKEN, METRICS_ALLOWED_ADDRESSES="10.0.0.0/8,::1")
    assert good.returncode == 0, good.stderr
    assert good.stdout.strip() == "['10.0.0.0/8', '::1']"


# --- Values -------------------------------------------------------------------------------


def test_a_sink_has_its_lag_status_and_partitions(client, token, prod):
    make.snapshot(prod, "s3-sink", "sink", lag_records=30, lag_ms=7_500, lag_status="ERR")
    make.sink_lags(prod, "s3-sink", "orders", 3, lag_records=10, lag_ms=7_500, status="OK")
    make.sink_lags(prod, "s3-sink", "clicks", 1, lag_records=0, lag_ms=None, status="STOP")
    parsed = scrape(client)
    sink = {"cluster": "prod", "connector": "s3-sink"}
    assert value(parsed, "sink_lag_records", **sink) == 30
    assert value(parsed, "sink_lag_seconds", **sink) == 7.5
    assert series(parsed, "sink_lag_status", **sink) == {
        frozenset({**sink, "status": "OK"}.items()): 0,
        frozenset({**sink, "status": "WARN"}.items()): 0,
        frozenset({**sink, "status": "ERR"}.items()): 1,
        frozenset({**sink, "status": "PAUSED"}.items()): 0,
    }
    counts = {dict(k)["status"]: v for k, v in series(parsed, "sink_partitions", **sink).items()}
    assert counts == {"OK": 3, "WARN": 0, "STALL": 0, "STOP": 1, "REWIND": 0}
    orders_1 = {**sink, "topic": "orders", "partition": "1"}
    assert value(parsed, "sink_partition_lag_records", **orders_1) == 10
    assert value(parsed, "sink_partition_lag_seconds", **orders_1) == 7.5
    assert value(parsed, "sink_partition_lag_status", **orders_1, status="OK") == 1
    # Only the current status has a partition series.
    assert len(series(parsed, "sink_partition_lag_status", **orders_1)) == 1
    clicks = {**sink, "topic": "clicks", "partition": "0"}
    assert value(parsed, "sink_partition_lag_status", **clicks, status="STOP") == 1
    assert value(parsed, "sink_partition_lag_seconds", **clicks) is None
    assert value(parsed, "sink_partitions_unexported") == 0


def test_a_sink_its_owner_paused_is_paused_never_err(client, token, prod):
    make.snapshot(
        prod,
        "held-sink",
        "sink",
        runtime_state="STOPPED",
        target_state="STOPPED",
        lag_records=30,
        lag_status="ERR",
    )
    make.snapshot(
        prod,
        "broken-sink",
        "sink",
        runtime_state="PAUSED",
        target_state="PAUSED",
        task_states={"0": "FAILED"},
        lag_status="ERR",
    )
    parsed = scrape(client)
    held = {"cluster": "prod", "connector": "held-sink"}
    assert value(parsed, "sink_lag_status", **held, status="PAUSED") == 1
    assert value(parsed, "sink_lag_status", **held, status="ERR") == 0
    # A failure in a paused connector is still an error.
    broken = {"cluster": "prod", "connector": "broken-sink"}
    assert value(parsed, "sink_lag_status", **broken, status="ERR") == 1


def test_past_the_cap_partition_series_are_dropped_and_counted(client, token, prod, settings):
    settings.METRICS_MAX_SINK_PARTITIONS = 3
    make.snapshot(prod, "s3-sink", "sink", lag_records=40)
    make.sink_lags(prod, "s3-sink", "orders", 4)
    parsed = scrape(client)
    assert series(parsed, "sink_partition_lag_records") == {}
    assert series(parsed, "sink_partition_lag_status") == {}
    assert value(parsed, "sink_partitions_unexported") == 4
    # The per-connector series stay.
    assert value(parsed, "sink_lag_records", cluster="prod", connector="s3-sink") == 40
    settings.METRICS_MAX_SINK_PARTITIONS = 4
    parsed = scrape(client)
    assert len(series(parsed, "sink_partition_lag_records")) == 4
    assert value(parsed, "sink_partitions_unexported") == 0
    settings.METRICS_MAX_SINK_PARTITIONS = 0
    assert value(scrape(client), "sink_partitions_unexported") == 4


def test_connector_and_task_states_are_labelled_gauges(client, token, prod):
    make.snapshot(
        prod,
        "jdbc-sink",
        "sink",
        runtime_state="RUNNING",
        task_states={"0": "RUNNING", "1": "FAILED", "2": "FAILED"},
        task_count=3,
    )
    make.snapshot(prod, "old-source", deleted=True, runtime_state="", task_states={})
    parsed = scrape(client)
    sink = {"cluster": "prod", "connector": "jdbc-sink"}
    states = series(parsed, "connector_state", **sink, type="sink")
    assert {dict(k)["state"]: v for k, v in states.items()} == {
        "RUNNING": 1,
        "PAUSED": 0,
        "STOPPED": 0,
        "FAILED": 0,
        "UNASSIGNED": 0,
        "RESTARTING": 0,
        "DELETED": 0,
    }
    tasks = {dict(k)["state"]: v for k, v in series(parsed, "connector_tasks", **sink).items()}
    assert tasks == {
        "RUNNING": 1,
        "PAUSED": 0,
        "STOPPED": 0,
        "FAILED": 2,
        "UNASSIGNED": 0,
        "RESTARTING": 0,
    }
    old = {"cluster": "prod", "connector": "old-source", "type": "source"}
    assert value(parsed, "connector_state", **old, state="DELETED") == 1
    assert sum(series(parsed, "connector_state", **old).values()) == 1


def test_a_source_has_its_commit_age_rate_stalls_rewinds_and_drift(client, token, prod):
    at = make.now() - timedelta(seconds=90)
    make.snapshot(
        prod,
        "jdbc-source",
        partitions=6,
        last_commit_at=at,
        stalled_partitions=2,
        rewinds=1,
        drifted_partitions=1,
        malformed=5,
    )
    run = RefreshRun.objects.get(cluster=prod)
    start, stop = commit_rate_window(run.finished_at, bucket_seconds=300)
    for index, commits in enumerate([30, 60, 90]):
        CommitBucket.objects.create(
            cluster=prod,
            connector="jdbc-source",
            bucket_start=start + timedelta(seconds=300 * index),
            commits=commits,
        )
    # Outside the window on either side: not counted.
    CommitBucket.objects.create(
        cluster=prod,
        connector="jdbc-source",
        bucket_start=start - timedelta(seconds=300),
        commits=999,
    )
    CommitBucket.objects.create(
        cluster=prod, connector="jdbc-source", bucket_start=stop, commits=999
    )
    parsed = scrape(client)
    source = {"cluster": "prod", "connector": "jdbc-source"}
    assert value(parsed, "source_partitions", **source) == 6
    assert 90 <= value(parsed, "source_last_commit_age_seconds", **source) < 120
    assert value(parsed, "source_commits_per_second", **source) == pytest.approx(
        180 / (COMMIT_RATE_BUCKETS * 300)
    )
    assert value(parsed, "source_stalled_partitions", **source) == 2
    assert value(parsed, "source_rewinds", **source) == 1
    assert value(parsed, "source_key_drift_partitions", **source) == 1
    assert value(parsed, "connector_malformed_records", **source) == 5
    # A source has no sink series.
    assert value(parsed, "sink_lag_records", **source) is None


def test_refreshes_are_described_per_cluster(client, token, prod):
    quiet = make.cluster("quiet")
    broken = make.cluster("broken")
    make.run(broken, ago=600)
    make.run(broken, RefreshRun.Status.FAILED, ago=300, seconds=3.0, records_read=7)
    make.run(broken, RefreshRun.Status.RUNNING, ago=5)
    parsed = scrape(client)
    assert value(parsed, "refresh_outcome", cluster="prod", outcome="succeeded") == 1
    assert value(parsed, "refresh_outcome", cluster="prod", outcome="failed") == 0
    assert value(parsed, "refresh_duration_seconds", cluster="prod") == 12.5
    assert value(parsed, "refresh_read_records", cluster="prod") == 4321
    assert 100 <= value(parsed, "refresh_last_success_age_seconds", cluster="prod") <= 130
    assert value(parsed, "refresh_running", cluster="prod") == 0
    # The last finished run failed; the last success is older; one runs now.
    assert value(parsed, "refresh_outcome", cluster="broken", outcome="failed") == 1
    assert value(parsed, "refresh_duration_seconds", cluster="broken") == 3.0
    assert value(parsed, "refresh_read_records", cluster="broken") == 7
    assert 580 <= value(parsed, "refresh_last_success_age_seconds", cluster="broken") <= 610
    assert value(parsed, "refresh_running", cluster="broken") == 1
    # Never refreshed: no age to give, and nothing running.
    assert value(parsed, "refresh_last_success_age_seconds", cluster=quiet.name) is None
    assert series(parsed, "refresh_outcome", cluster=quiet.name) == {}
    assert value(parsed, "refresh_running", cluster=quiet.name) == 0


def test_edits_are_counted_by_state_per_cluster(client, token, prod, editor):
    make_edit(prod, editor, state="submitted", connector="a")
    make_edit(prod, editor, state="submitted", connector="b")
    make_edit(prod, editor, state="applied", connector="c")
    parsed = scrape(client)
    edits = {dict(k)["state"]: v for k, v in series(parsed, "edits", cluster="prod").items()}
    assert edits["submitted"] == 2
    assert edits["applied"] == 1
    assert edits["approved"] == 0
    assert set(edits) == {
        "draft", "submitted", "approved", "applying", "applied",
        "failed", "conflict", "rejected", "cancelled",
    }  # fmt: skip


def test_malformed_records_are_counted_by_topic_and_reason(client, token, prod):
    from offsets.models import MalformedCount

    for connector, count in (("a", 3), ("b", 4), ("", 1)):
        MalformedCount.objects.create(
            cluster=prod, topic="connect-offsets", connector=connector, reason="key-not-json",
            count=count,
        )  # fmt: skip
    MalformedCount.objects.create(
        cluster=prod, topic="connect-status", reason="value-not-json", count=2
    )
    parsed = scrape(client)
    offsets = {"cluster": "prod", "topic": "connect-offsets", "reason": "key-not-json"}
    assert value(parsed, "malformed_records", **offsets) == 8
    status = {"cluster": "prod", "topic": "connect-status", "reason": "value-not-json"}
    assert value(parsed, "malformed_records", **status) == 2


HOSTILE = 'src "quoted" \\ back\\slash\nnew line ünï 名前 🚀 } {a="b"}'


def test_a_hostile_connector_name_survives_the_text_format(client, token, prod):
    make.snapshot(prod, HOSTILE, "sink", lag_records=11)
    make.sink_lags(prod, HOSTILE, "orders", 1, lag_records=11)
    make.snapshot(prod, "plain", "sink", lag_records=2)
    parsed = scrape(client)
    assert value(parsed, "sink_lag_records", cluster="prod", connector=HOSTILE) == 11
    assert value(parsed, "sink_lag_records", cluster="prod", connector="plain") == 2
    one = {"cluster": "prod", "connector": HOSTILE, "topic": "orders", "partition": "0"}
    assert value(parsed, "sink_partition_lag_records", **one) == 11


def test_a_deleted_connector_or_cluster_vanishes_from_the_next_scrape(client, token, prod):
    make.snapshot(prod, "gone-sink", "sink", lag_records=5)
    other = make.cluster("other")
    make.run(other)
    assert value(scrape(client), "sink_lag_records", cluster="prod", connector="gone-sink") == 5
    ConnectorSnapshot.objects.filter(name="gone-sink").delete()
    other.delete()
    parsed = scrape(client)
    assert series(parsed, "sink_lag_records", connector="gone-sink") == {}
    assert series(parsed, "connector_state", connector="gone-sink") == {}
    assert all(dict(labels).get("cluster") != "other" for _, labels in parsed)


def test_a_scrape_costs_the_same_few_queries_whatever_the_size(
    client, token, prod, django_assert_max_num_queries
):
    for index in range(30):
        make.snapshot(prod, f"sink-{index}", "sink", lag_records=1)
        make.sink_lags(prod, f"sink-{index}", "t", 3)
        make.snapshot(prod, f"source-{index}", last_commit_at=make.now())
        make.commit_buckets(prod, f"source-{index}", 5)
    # The mirrors' per-partition series take one query more, whatever their number.
    with django_assert_max_num_queries(10):
        parsed = scrape(client)
    assert len(series(parsed, "sink_partition_lag_records")) == 90
    assert len(series(parsed, "source_commits_per_second")) == 30


def test_a_mirror_has_series_of_its_own_and_none_among_the_sinks(client, token, prod):
    make.snapshot(
        prod,
        "mirror",
        lag_records=12,
        lag_ms=4_000,
        lag_status="ERR",
        source_alias="east",
        upstream_cluster="east-kafka",
    )
    make.sink_lags(prod, "mirror", "orders", 2, lag_records=6, status="STOP", upstream="east-kafka")
    make.snapshot(prod, "unmapped-mirror", source_alias="west")
    make.snapshot(prod, "s3-sink", "sink", lag_records=3)
    make.sink_lags(prod, "s3-sink", "orders", 1, lag_records=3)
    parsed = scrape(client)
    mirror = {"cluster": "prod", "connector": "mirror"}
    assert value(parsed, "mirror_lag_records", **mirror) == 12
    assert value(parsed, "mirror_lag_seconds", **mirror) == 4.0
    assert value(parsed, "mirror_lag_status", **mirror, status="ERR") == 1
    assert value(parsed, "mirror_partitions", **mirror, status="STOP") == 2
    assert (
        value(parsed, "mirror_partition_lag_records", **mirror, topic="orders", partition="1") == 6
    )
    assert value(parsed, "mirror_partitions_unexported") == 0
    # Each kind in its own series: no mirror among the sinks, no sink among the mirrors, and
    # no series for a mirror whose upstream is not chosen.
    assert series(parsed, "sink_lag_records", connector="mirror") == {}
    assert series(parsed, "sink_partition_lag_records", connector="mirror") == {}
    assert series(parsed, "mirror_lag_records", connector="s3-sink") == {}
    assert series(parsed, "mirror_partition_lag_records", connector="s3-sink") == {}
    assert series(parsed, "mirror_lag_records", connector="unmapped-mirror") == {}
