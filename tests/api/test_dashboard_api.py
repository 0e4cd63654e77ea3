"""The REST API behind the pages: everything a page shows, as JSON."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework.authtoken.models import Token

from offsets.models import RefreshRun, SourceOffset
from offsets.refresh import background
from tests.support import factories as make

pytestmark = pytest.mark.django_db

BASE = "/api/v1/clusters/prod"
ENDPOINTS = [
    "/api/v1/clusters/",
    f"{BASE}/connectors/",
    f"{BASE}/connectors/jdbc-source/",
    f"{BASE}/connectors/jdbc-source/partitions/",
    f"{BASE}/connectors/jdbc-source/offsets/",
    f"{BASE}/connectors/jdbc-source/lag/",
    f"{BASE}/connectors/jdbc-source/history/",
    f"{BASE}/refreshes/",
]


@pytest.fixture
def prod():
    cluster = make.cluster("prod")
    make.run(cluster, ago=120)
    make.snapshot(
        cluster,
        "jdbc-source",
        partitions=30,
        config={"connection.password": "hunter2", "mode": "incrementing"},
        rewinds=1,
    )
    offsets = make.source_offsets(cluster, "jdbc-source", 30)
    make.rewind(cluster, offsets[2])
    make.commit_buckets(cluster, "jdbc-source", 6)
    make.snapshot(
        cluster, "s3-sink", "sink", partitions=2, lag_records=20, lag_ms=5000, lag_status="WARN"
    )
    make.sink_lags(cluster, "s3-sink", "orders", 1)
    make.sink_lags(cluster, "s3-sink", "payments", 1, committed=None, status="STOP")
    make.lag_samples(cluster, "s3-sink", "orders", 1, 4)
    return cluster


@pytest.fixture
def launched(monkeypatch):
    calls = []
    monkeypatch.setattr(background, "_launch", lambda **kwargs: calls.append(kwargs))
    return calls


@pytest.mark.parametrize("url", ENDPOINTS)
def test_every_endpoint_refuses_anonymous_callers(client, prod, url):
    assert client.get(url).status_code == 401


def test_starting_a_refresh_refuses_anonymous_callers(client, prod, launched):
    assert client.post(f"{BASE}/refreshes/").status_code == 401
    assert not launched


@pytest.mark.parametrize("url", ENDPOINTS)
def test_a_token_opens_every_endpoint(client, prod, user, url):
    token = Token.objects.create(user=user)
    assert client.get(url, HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 200
    # 401 with WWW-Authenticate: token authentication comes first in the settings.
    wrong = client.get(url, HTTP_AUTHORIZATION="Token wrong")
    assert wrong.status_code == 401 and wrong["WWW-Authenticate"] == "Token"
    assert wrong.json() == {"detail": "Invalid token."}


@pytest.mark.parametrize("url", [u.replace("/prod/", "/nope/") for u in ENDPOINTS[1:]])
def test_an_unknown_cluster_is_404(logged_in_client, url):
    assert logged_in_client.get(url).status_code == 404


@pytest.mark.parametrize("suffix", ["", "partitions/", "offsets/", "lag/", "history/"])
def test_an_unknown_connector_is_404(logged_in_client, prod, suffix):
    response = logged_in_client.get(f"{BASE}/connectors/nope/{suffix}")
    assert response.status_code == 404
    assert "No connector named 'nope' on prod" in response.json()["detail"]


def test_clusters_carry_counts_lag_status_and_refreshes(logged_in_client, prod):
    make.run(prod, RefreshRun.Status.FAILED, ago=5, error="down")
    [cluster] = logged_in_client.get("/api/v1/clusters/").json()
    assert cluster["connectors"] == 2
    assert cluster["counts_by_state"] == {"RUNNING": 2}
    assert cluster["total_sink_lag"] == 20
    assert cluster["worst_lag_status"] == "WARN"
    assert cluster["last_refresh"]["status"] == "failed"
    assert cluster["last_refresh"]["error"] == "down"
    assert cluster["last_successful_refresh"]["status"] == "succeeded"
    assert cluster["results_as_of"] == cluster["last_successful_refresh"]["finished_at"]
    assert cluster["stale"] is False


def test_connectors_are_filtered_and_sorted_like_the_page(logged_in_client, prod):
    body = logged_in_client.get(f"{BASE}/connectors/?sort=-lag_records").json()
    assert [c["name"] for c in body["connectors"]] == ["s3-sink", "jdbc-source"]
    assert body["count"] == 2
    assert body["last_successful_refresh"]["status"] == "succeeded"
    body = logged_in_client.get(f"{BASE}/connectors/?status=STOP").json()
    sink = body["connectors"][0]
    assert sink["name"] == "s3-sink"
    assert sink["status_reasons"] == ["STOP"]
    assert sink["url"] == "/api/v1/clusters/prod/connectors/s3-sink/"
    response = logged_in_client.get(f"{BASE}/connectors/?sort=nope")
    assert response.status_code == 400
    assert "sort" in response.json()


def test_a_connector_has_its_masked_config_and_tasks(logged_in_client, prod):
    body = logged_in_client.get(f"{BASE}/connectors/jdbc-source/").json()
    assert body["config"] == {"connection.password": "********", "mode": "incrementing"}
    assert body["task_states"] == {"0": "RUNNING"}
    assert body["status_reasons"] == ["REWIND"]


def test_partitions_are_paged_and_searchable(logged_in_client, prod):
    body = logged_in_client.get(
        f"{BASE}/connectors/jdbc-source/partitions/?q=table_0001&page_size=4&page=2"
    ).json()
    assert body["count"] == 10
    assert body["pages"] == 3
    assert [p["partition"] for p in body["source_partitions"]] == [
        {"table": f"table_{i:05d}"} for i in range(14, 18)
    ]
    sink = logged_in_client.get(f"{BASE}/connectors/s3-sink/partitions/?sort=-status").json()
    assert sink["sink_partitions"][0]["topic"] == "payments"
    assert sink["sink_partitions"][0]["committed"] is None
    bad = logged_in_client.get(f"{BASE}/connectors/s3-sink/partitions/?sort=commits&page_size=5000")
    assert bad.status_code == 400
    assert set(bad.json()) == {"sort", "page_size"}


def test_a_page_number_that_is_not_an_integer_is_refused(logged_in_client, prod):
    # DRF's IntegerField alone would take "2.0" as 2 (schemathesis found ?page=4.0 answered).
    url = f"{BASE}/connectors/jdbc-source/partitions/"
    for query in ("page=2.0", "page_size=4.0", "page=1e1", "page=+2", "page=%202", "page=two"):
        bad = logged_in_client.get(f"{url}?{query}")
        assert bad.status_code == 400, query
        assert bad.json() == {query.split("=")[0]: ["A valid integer is required."]}
    good = logged_in_client.get(f"{url}?page=2&page_size=4").json()
    assert (good["page"], len(good["source_partitions"])) == (2, 4)


def test_offsets_are_the_kip875_document(logged_in_client, prod):
    body = logged_in_client.get(f"{BASE}/connectors/jdbc-source/offsets/").json()
    assert len(body["offsets"]) == 30
    assert body["offsets"][3] == {"partition": {"table": "table_00003"}, "offset": {"id": 30}}
    sink = logged_in_client.get(f"{BASE}/connectors/s3-sink/offsets/").json()
    assert sink == {
        "offsets": [
            {
                "partition": {"kafka_topic": "orders", "kafka_partition": 0},
                "offset": {"kafka_offset": 90},
            }
        ]
    }


def test_lag_lists_a_sinks_topic_partitions(logged_in_client, prod):
    body = logged_in_client.get(f"{BASE}/connectors/s3-sink/lag/").json()
    assert body["lag_records"] == 20
    assert body["lag_status"] == "WARN"
    assert [(p["topic"], p["committed"], p["status"]) for p in body["partitions"]] == [
        ("orders", 90, "OK"),
        ("payments", None, "STOP"),
    ]
    assert logged_in_client.get(f"{BASE}/connectors/jdbc-source/lag/").json()["partitions"] == []


def test_history_has_buckets_rewinds_lag_and_a_partitions_commits(
    logged_in_client, prod, partition_history
):
    partition_history.points.extend(make.history(3, rewind_at=2))
    body = logged_in_client.get(f"{BASE}/connectors/jdbc-source/history/").json()
    assert len(body["commit_buckets"]) == 6
    assert body["rewinds"][0]["from_progress"] == 500.0
    assert "partition_history" not in body
    sink = logged_in_client.get(f"{BASE}/connectors/s3-sink/history/").json()
    assert [s["lag_records"] for s in sink["lag_samples"]] == [10, 11, 12, 13]

    chosen = SourceOffset.objects.get(identity__contains="table_00002")
    body = logged_in_client.get(
        f"{BASE}/connectors/jdbc-source/history/?partition={chosen.key_hash}"
        "&since=2026-01-01T00:00:00Z"
    ).json()
    assert body["partition_history"]["partition"] == {"table": "table_00002"}
    assert [c["rewind"] for c in body["partition_history"]["commits"]] == [False, False, True]
    assert partition_history.calls[0]["since"].year == 2026
    unknown = logged_in_client.get(f"{BASE}/connectors/jdbc-source/history/?partition={'a' * 40}")
    assert unknown.status_code == 404
    assert (
        logged_in_client.get(f"{BASE}/connectors/jdbc-source/history/?partition=x").status_code
        == 400
    )


def test_refreshes_are_listed_newest_first(logged_in_client, prod):
    make.run(prod, RefreshRun.Status.FAILED, ago=5, error="down")
    runs = logged_in_client.get(f"{BASE}/refreshes/").json()
    assert [r["status"] for r in runs] == ["failed", "succeeded"]


def test_a_running_refresh_shows_its_last_sign_of_life(logged_in_client, prod):
    beat = timezone.now() - timedelta(seconds=7)
    make.run(prod, RefreshRun.Status.RUNNING, ago=60, heartbeat_at=beat)
    running = logged_in_client.get(f"{BASE}/refreshes/").json()[0]
    assert running["status"] == "running"
    assert parse_datetime(running["heartbeat_at"]) == beat


def test_starting_a_refresh_needs_the_permission(logged_in_client, prod, launched):
    response = logged_in_client.post(f"{BASE}/refreshes/")
    assert response.status_code == 403
    assert not launched


def test_starting_a_refresh_returns_202_then_409_while_it_runs(operator_client, prod, launched):
    response = operator_client.post(
        f"{BASE}/refreshes/", {"full": True}, content_type="application/json"
    )
    assert response.status_code == 202
    assert response.json()["status"] == "running"
    assert response.json()["full"] is True
    assert launched[0]["full"] is True
    again = operator_client.post(f"{BASE}/refreshes/")
    assert again.status_code == 409
    assert again.json()["running"]["id"] == response.json()["id"]
    assert "already running" in again.json()["detail"]


def test_starting_a_refresh_of_an_unknown_cluster_is_404(operator_client, launched):
    assert operator_client.post("/api/v1/clusters/nope/refreshes/").status_code == 404


def test_the_schema_documents_the_new_endpoints(logged_in_client):
    paths = logged_in_client.get(
        "/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    ).json()["paths"]
    for path in (
        "/api/v1/clusters/{cluster_name}/connectors/",
        "/api/v1/clusters/{cluster_name}/connectors/{connector_name}/offsets/",
        "/api/v1/clusters/{cluster_name}/connectors/{connector_name}/lag/",
        "/api/v1/clusters/{cluster_name}/connectors/{connector_name}/history/",
        "/api/v1/clusters/{cluster_name}/refreshes/",
    ):
        assert path in paths


def test_every_operation_that_reads_a_body_documents_415(logged_in_client):
    # DRF answers 415 to a body it has no parser for; schemathesis only finds an undocumented
    # one when its generator happens to send such a body, so the rule is checked here outright.
    paths = logged_in_client.get(
        "/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    ).json()["paths"]
    taking_a_body = [
        (method, path, operation)
        for path, operations in paths.items()
        for method, operation in operations.items()
        if "requestBody" in operation
    ]
    assert len(taking_a_body) > 10
    assert [
        (method, path)
        for method, path, operation in taking_a_body
        if "415" not in operation["responses"]
    ] == []


def test_a_control_request_with_a_body_of_no_known_type_is_415(operator_client, prod):
    answer = operator_client.post(
        f"/api/v1/clusters/{prod.name}/connectors/anything/restart/",
        data=b"<x/>",
        content_type="application/xml",
    )
    assert answer.status_code == 415


def test_the_schema_is_valid_and_generates_without_warnings(tmp_path):
    from django.core.management import call_command

    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml")
    )


def test_a_connector_lists_its_tasks_with_worker_and_error(logged_in_client, prod):
    make.snapshot(
        prod,
        "half-failed",
        task_states={"1": "FAILED", "0": "RUNNING"},
        task_details={
            "0": {"worker_id": "w1:8083", "trace": ""},
            "1": {"worker_id": "w2:8083", "trace": "E: boom\n\tat X.y(X.java:1)"},
        },
    )
    body = logged_in_client.get(f"{BASE}/connectors/half-failed/").json()
    assert body["failed_tasks"] == 1
    assert body["tasks"] == [
        {"task": 0, "state": "RUNNING", "worker_id": "w1:8083", "error": "", "trace": ""},
        {
            "task": 1,
            "state": "FAILED",
            "worker_id": "w2:8083",
            "error": "E: boom",
            "trace": "E: boom\n\tat X.y(X.java:1)",
        },
    ]
    listed = logged_in_client.get(f"{BASE}/connectors/?state=FAILED").json()["connectors"]
    assert [c["name"] for c in listed] == ["half-failed"]


def test_a_sinks_lag_says_which_partitions_have_no_commit_yet(logged_in_client, prod):
    prod.connectors.filter(name="s3-sink").update(uncommitted_partitions=1)
    body = logged_in_client.get(f"{BASE}/connectors/s3-sink/lag/").json()
    assert body["uncommitted_partitions"] == 1
    assert "no commit yet" in body["status_reasons"]
    assert body["lag_records"] == 20 and body["offsets_managed_externally"] is False
