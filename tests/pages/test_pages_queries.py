"""No page queries once per row: each page and partial makes a fixed number of queries.

The tables hold more rows than a page shows, so a query per row (an N+1) would add dozens.
The limits are the counts the pages make today: a new query must be a deliberate change here.
Each page is asked twice: first computed, then from the cache of the last refresh run's
results (dashboard/pages/cache.py), which leaves only the session, the user, the cluster or
connector, the refresh state and the permissions to read.
"""

import re

import pytest

from tests.support import factories as make

pytestmark = pytest.mark.django_db

CONNECTORS = 120  # more than a page (50)
PARTITIONS = 130
HTMX = {"HX-Request": "true"}


@pytest.fixture
def big():
    cluster = make.cluster("prod")
    make.run(cluster)
    for index in range(CONNECTORS):
        sink = index % 2 == 0
        name = f"{'sink' if sink else 'source'}-{index:03d}"
        make.snapshot(
            cluster,
            name,
            "sink" if sink else "source",
            partitions=4 if sink else 3,
            mirrormaker2=index % 7 == 0,
            own_offsets_topic="connect-offsets-eos" if index % 9 == 0 else "",
            rewinds=index % 5 == 0,
            stalled_partitions=index % 11 == 0,
            last_commit_at=None if sink else make.now(),
            lag_status=["OK", "WARN", "ERR"][index % 3],
        )
        if sink:
            make.sink_lags(cluster, name, "orders", 4, status=["OK", "STALL", "STOP"][index % 3])
    make.snapshot(cluster, "jdbc", partitions=PARTITIONS)
    offsets = make.source_offsets(cluster, "jdbc", PARTITIONS)
    for index, offset in enumerate(offsets[:30]):
        make.rewind(cluster, offset, kafka_offset=index)
    make.commit_buckets(cluster, "jdbc", 100)
    make.snapshot(cluster, "s3", "sink", partitions=PARTITIONS)
    make.sink_lags(cluster, "s3", "orders", PARTITIONS)
    make.lag_samples(cluster, "s3", "orders", 4, 100)
    return {"cluster": cluster, "rewound": offsets[0].key_hash}


def rows(html: str, attribute: str) -> int:
    return len(re.findall(rf"<tr {attribute}=", html))


@pytest.mark.parametrize(
    ("query", "headers", "expected_rows"),
    [
        ("", {}, 50),
        ("?sort=-status", {**HTMX, "HX-Target": "connectors-table"}, 50),
        ("?status=STALL&page=2&sort=state", {**HTMX, "HX-Target": "connectors-table"}, 0),
        ("?type=sink&sort=-lag_records&page=2", {**HTMX, "HX-Target": "connectors-table"}, 11),
    ],
)
def test_the_connectors_list_makes_a_fixed_number_of_queries(
    logged_in_client, big, django_assert_max_num_queries, query, headers, expected_rows
):
    # One of them reads the user's grants (which clusters they see, may they press Refresh?).
    for limit in (9, 6):  # computed, then cached
        with django_assert_max_num_queries(limit):
            response = logged_in_client.get(f"/clusters/prod/connectors/{query}", headers=headers)
        assert response.status_code == 200
        if expected_rows:
            assert rows(response.content.decode(), "data-connector") == expected_rows


@pytest.mark.parametrize(
    ("connector", "query", "headers", "limits"),
    [
        # The user's grants (which clusters they see), the cluster, the refresh, then the
        # connector from the cache of that run: cached,
        # the snapshot costs no query; computed, one more than a join with the cluster would,
        # and one to count the partitions whose newer offset could not be stored; the charts'
        # events, two: the states the refreshes saw change, the controls and applied edits;
        # where its commit buckets start (the chart's bucket width), one.
        ("jdbc", "", {}, (16, 5)),
        # The partials read which run is on show (one query) where the page reads the refresh.
        ("jdbc", "?page=3", {**HTMX, "HX-Target": "partitions"}, (9, 5)),
        ("jdbc", "?sort=-last_commit", {**HTMX, "HX-Target": "partitions"}, (9, 5)),
        # A sink's partition status is cached with the page's charts. One more query, cached
        # or not, reads where its offsets live (its SinkOffsetsStore setting: an admin's, which
        # changes without a refresh, like the cluster's settings); the charts' events, two;
        # where its commit buckets and lag samples start (the charts' bucket widths), two.
        ("s3", "", {}, (16, 6)),
        ("s3", "?page=2&sort=-status", {**HTMX, "HX-Target": "partitions"}, (8, 5)),
    ],
)
def test_a_connector_page_and_its_partials_make_a_fixed_number_of_queries(
    logged_in_client, big, django_assert_max_num_queries, connector, query, headers, limits
):
    for limit in limits:  # computed, then cached
        with django_assert_max_num_queries(limit):
            response = logged_in_client.get(
                f"/clusters/prod/connectors/{connector}/{query}", headers=headers
            )
        assert response.status_code == 200
        # A full page of partitions was drawn (page 3 of 130 holds the last 30).
        expected = 30 if "page=3" in query else 50
        assert rows(response.content.decode(), "data-partition") == expected


def test_a_connector_page_with_a_worker_url_reads_the_users_roles_once(
    logged_in_client, big, django_assert_max_num_queries
):
    # With a worker to stop or resume the connector through, the page asks whether the user
    # may: their permissions and their groups', two queries, whatever the size.
    big["cluster"].connect_url = "http://connect:8083"
    big["cluster"].save()
    # Computed (the charts' events: two; where the commit buckets start: one), then cached.
    for limit in (17, 6):
        with django_assert_max_num_queries(limit):
            response = logged_in_client.get("/clusters/prod/connectors/jdbc/")
        assert response.status_code == 200
        assert 'id="connector-control"' in response.content.decode()


def test_the_progress_chart_makes_a_fixed_number_of_queries(
    logged_in_client, big, partition_history, django_assert_max_num_queries
):
    partition_history.points.extend(make.history(200, rewind_at=100))
    # Computed, one more reads the applied edits its rewind may link to; then cached. One of
    # each reads the user's grants.
    for limit in (8, 5):
        with django_assert_max_num_queries(limit):
            response = logged_in_client.get(
                f"/clusters/prod/connectors/jdbc/?partition={big['rewound']}",
                headers={**HTMX, "HX-Target": "progress"},
            )
        assert response.status_code == 200
        assert 'data-chart="progress"' in response.content.decode()


def test_the_clusters_overview_makes_a_fixed_number_of_queries(
    logged_in_client, big, django_assert_max_num_queries
):
    make.run(make.cluster("other"))
    # Two read the user's permissions; one names each cluster's worst connector.
    with django_assert_max_num_queries(8):
        response = logged_in_client.get("/", headers={**HTMX, "HX-Target": "clusters"})
    assert response.status_code == 200
    assert 'data-cluster="other"' in response.content.decode()


@pytest.mark.parametrize("sort", ["partition", "-last_commit"])
def test_a_page_of_partitions_is_read_in_index_order_on_sqlite(big, sort):
    from django.db import connection

    from offsets.queries import snapshots

    if connection.vendor != "sqlite":
        pytest.skip("the plan checked is SQLite's; PostgreSQL's index differs (migration 0005)")
    rows = snapshots.source_partitions(cluster=big["cluster"], connector="jdbc", sort=sort)
    # What paginate(by_keys=True) reads for a page: keys in order, past an OFFSET.
    plan = rows.values_list("pk", flat=True)[100:150].explain()
    assert "USING COVERING INDEX" in plan
    assert "TEMP B-TREE" not in plan, plan
