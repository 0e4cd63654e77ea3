"""One connector: partitions, lag, charts, config, tasks and the JSON export."""

import dataclasses
import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from offsets.models import (
    AuditEvent,
    CommitBucket,
    ConnectorSnapshot,
    ConnectorStateChange,
    OffsetEdit,
    RefreshRun,
    SourceOffset,
)
from tests.support import factories as make
from tests.support.edits_factory import make_edit

pytestmark = pytest.mark.django_db

SOURCE = "/clusters/prod/connectors/jdbc-source/"
SINK = "/clusters/prod/connectors/s3-sink/"


def path_points(html: str, chart: str) -> int:
    figure = html.split(f'data-chart="{chart}"')[1].split("</figure>")[0]
    match = re.search(r'<path class="line" d="([^"]*)" data-points="(\d+)"', figure)
    assert match, f"chart {chart} draws no line"
    assert match.group(1).count(",") == int(match.group(2))
    return int(match.group(2))


@pytest.fixture
def prod():
    cluster = make.cluster("prod")
    make.run(cluster)
    make.snapshot(
        cluster,
        "jdbc-source",
        partitions=120,
        rewinds=1,
        task_count=2,
        task_states={"0": "RUNNING", "1": "FAILED"},
        trace="java.sql.SQLException: gone",
        config={
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
            "connection.password": "hunter2",
            "connection.url": "jdbc:postgresql://app:s3cret@db:5432/app",
            "table.whitelist": "orders",
        },
    )
    offsets = make.source_offsets(cluster, "jdbc-source", 120)
    SourceOffset.objects.filter(pk=offsets[7].pk).update(rewinds=1)
    make.rewind(cluster, offsets[7])
    make.commit_buckets(cluster, "jdbc-source", 36)
    make.snapshot(cluster, "s3-sink", "sink", partitions=3, lag_records=30, lag_ms=9_000)
    make.sink_lags(cluster, "s3-sink", "orders", 2)
    make.sink_lags(cluster, "s3-sink", "payments", 1, committed=None, lag_records=50)
    make.lag_samples(cluster, "s3-sink", "orders", 2, 12)
    return cluster


def test_the_detail_page_requires_login(client, prod):
    response = client.get(SOURCE)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_an_unknown_connector_is_a_404_page_that_names_it(logged_in_client, prod):
    response = logged_in_client.get("/clusters/prod/connectors/nope/")
    assert response.status_code == 404
    assert "No connector named &#x27;nope&#x27; on prod" in response.content.decode()


def test_an_unknown_cluster_is_a_404(logged_in_client):
    assert logged_in_client.get("/clusters/nope/connectors/x/").status_code == 404


def test_a_source_shows_one_page_of_its_partitions(logged_in_client, prod):
    html = logged_in_client.get(SOURCE).content.decode()
    assert "120 partitions, 1\u201350 shown." in html
    rows = re.findall(r'<tr data-partition="([0-9a-f]{40})"', html)
    assert len(rows) == 50
    assert "{&quot;table&quot;:&quot;table_00000&quot;}" in html
    assert "{&quot;id&quot;:0}" in html
    assert "page 1 of 3" in html


def test_partition_maps_are_escaped_and_an_offset_without_its_text_comes_from_its_json(
    logged_in_client, prod
):
    first = SourceOffset.objects.get(cluster=prod, connector="jdbc-source", kafka_offset=0)
    first.partition_text = '{"table":"<b>orders</b>"}'
    first.offset_text = None  # rows written before the text was kept
    first.save()
    html = logged_in_client.get(SOURCE).content.decode()
    row = html.split(f'<tr data-partition="{first.key_hash}"')[1].split("</tr>")[0]
    assert "{&quot;table&quot;:&quot;&lt;b&gt;orders&lt;/b&gt;&quot;}" in row
    assert '<code class="map">{&quot;id&quot;:0}</code>' in row


def test_partitions_are_searchable_and_paged_by_htmx(logged_in_client, prod):
    response = logged_in_client.get(
        SOURCE + "?q=table_0011", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="partitions"
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="partitions" ')
    assert "10 partitions matching “table_0011”." in html
    assert len(re.findall(r"<tr data-partition=", html)) == 10
    page3 = logged_in_client.get(
        SOURCE + "?page=3", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="partitions"
    ).content.decode()
    assert len(re.findall(r"<tr data-partition=", page3)) == 20
    assert "page 3 of 3" in page3


@pytest.mark.parametrize("probe", [5, 100, 1000])
def test_a_search_pages_alike_whether_counted_from_its_keys_or_not(
    logged_in_client, prod, monkeypatch, probe
):
    # 100 partitions match: more than a probe of 5 keys (counted by the database), as many as
    # a probe of 100 and fewer than one of 1,000 (counted from the keys read).
    monkeypatch.setattr("dashboard.pages.connector.views.SEARCH_PROBE", probe)
    html = logged_in_client.get(
        SOURCE + "?q=table_000&page=2&sort=-partition",
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="partitions",
    ).content.decode()
    assert "100 partitions matching “table_000”, 51\u2013100 shown." in html
    assert "page 2 of 2" in html
    shown = re.findall(r"table_(\d{5})&quot;", html)
    assert shown == [f"{index:05d}" for index in range(49, -1, -1)]


def test_partitions_sort_by_rewinds(logged_in_client, prod):
    html = logged_in_client.get(SOURCE + "?sort=-rewinds").content.decode()
    first = re.search(
        r'<tr data-partition="[0-9a-f]{40}"[^>]*>\s*<td><code class="map">([^<]*)<', html
    )
    assert first.group(1) == "{&quot;table&quot;:&quot;table_00007&quot;}"


def test_a_partition_search_with_ten_thousand_partitions_makes_a_fixed_number_of_queries(
    logged_in_client, prod, django_assert_max_num_queries
):
    make.snapshot(prod, "big", partitions=10_000)
    make.source_offsets(prod, "big", 10_000)
    with django_assert_max_num_queries(8):
        html = logged_in_client.get(
            "/clusters/prod/connectors/big/?q=table_09&page=2",
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="partitions",
        ).content.decode()
    assert "1,000 partitions matching" in html
    # The charts' events add two: the states the refreshes saw change, the audit's; where
    # the commit buckets start (the chart's bucket width), one.
    with django_assert_max_num_queries(17):
        logged_in_client.get("/clusters/prod/connectors/big/")


def test_a_rewind_an_applied_edit_wrote_links_to_that_edit(
    logged_in_client, prod, partition_history, editor
):
    points = make.history(60, rewind_at=30)
    partition_history.points.extend(points)
    rewound = SourceOffset.objects.get(connector="jdbc-source", rewinds=1)
    rewind = points[30]

    def applied(
        value: int, started: timedelta, finished: timedelta, state: str = "applied"
    ) -> OffsetEdit:
        edit = make_edit(prod, editor, connector="jdbc-source")
        edit.changes.update(key_bytes=bytes(rewound.key_bytes), after={"id": value})
        OffsetEdit.objects.filter(pk=edit.pk).update(
            state=state,
            apply_started_at=rewind.at + started,
            finished_at=rewind.at + finished,
        )
        return edit

    # The worker wrote the record after the apply's start and before its finish was recorded.
    edit = applied(int(rewind.progress), timedelta(seconds=-2), timedelta(seconds=3))
    # Another value, or a window that ended before the record: no explanation.
    applied(int(rewind.progress) + 1, timedelta(seconds=-2), timedelta(seconds=3))
    applied(int(rewind.progress), timedelta(minutes=-5), timedelta(minutes=-4))
    # One whose apply never wrote (a lock check found the offsets moved): no explanation.
    applied(int(rewind.progress), timedelta(seconds=-2), timedelta(seconds=3), "conflict")
    html = logged_in_client.get(
        SOURCE, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="progress"
    ).content.decode()
    assert html.count('data-marker="edit"') == 1 and 'data-marker="rewind"' not in html
    assert f'<a href="/clusters/prod/edits/{edit.pk}/" class="marker-link"' in html
    assert f"<title>edit #{edit.pk} moved the offset back at " in html
    assert "1 moved back by an edit" in html and " 1 rewind" not in html
    # Hovering a point of the line names its time and value.
    assert html.count('<circle class="hover"') == 60


def test_a_rewind_no_edit_wrote_stays_a_rewind(logged_in_client, prod, partition_history, editor):
    points = make.history(60, rewind_at=30)
    partition_history.points.extend(points)
    edit = make_edit(prod, editor, connector="jdbc-source")
    # Applied between the commits, but it wrote another partition.
    OffsetEdit.objects.filter(pk=edit.pk).update(
        state="applied", apply_started_at=points[29].at, finished_at=points[30].at
    )
    html = logged_in_client.get(
        SOURCE, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="progress"
    ).content.decode()
    assert html.count('data-marker="rewind"') == 1 and "marker-link" not in html
    assert "no edit explains it</title>" in html and " 1 rewind" in html


def test_the_commit_rate_chart_draws_every_bucket(logged_in_client, prod):
    html = logged_in_client.get(SOURCE).content.decode()
    assert path_points(html, "commits") == 36


def test_the_progress_chart_loads_by_htmx_and_marks_rewinds(
    logged_in_client, prod, partition_history
):
    partition_history.points.extend(make.history(60, rewind_at=30))
    page = logged_in_client.get(SOURCE).content.decode()
    # The page defers the chart (it reads Parquet) to a request of its own.
    assert (
        'id="progress" class="progress" hx-get="/clusters/prod/connectors/jdbc-source/?range=24h"'
        ' hx-trigger="load"' in page
    )
    assert not partition_history.calls

    response = logged_in_client.get(SOURCE, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="progress")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="progress"')
    assert path_points(html, "progress") == 60
    assert html.count('<circle class="marker"') == 1
    # By default the chart shows a partition that rewound.
    rewound = SourceOffset.objects.get(connector="jdbc-source", rewinds=1)
    assert partition_history.calls == [
        {
            "cluster": prod,
            "connector": "jdbc-source",
            "key_hash": rewound.key_hash,
            "since": ConnectorSnapshot.objects.get(name="jdbc-source").updated_at
            - timedelta(hours=24),
            "connector_class": "io.example.SourceConnector",
        }
    ]
    assert "table_00007" in html


def test_a_chosen_partition_is_charted_and_an_unknown_one_is_404(
    logged_in_client, prod, partition_history
):
    partition_history.points.extend(make.history(5))
    chosen = SourceOffset.objects.get(connector="jdbc-source", identity__contains="table_00042")
    html = logged_in_client.get(
        f"{SOURCE}?partition={chosen.key_hash}", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="progress"
    ).content.decode()
    assert "table_00042" in html
    assert path_points(html, "progress") == 5
    # Without htmx (a link followed), the page draws it in place.
    full = logged_in_client.get(f"{SOURCE}?partition={chosen.key_hash}").content.decode()
    assert path_points(full, "progress") == 5
    assert logged_in_client.get(f"{SOURCE}?partition={'0' * 40}").status_code == 404
    assert logged_in_client.get(f"{SOURCE}?partition=../etc").status_code == 400


def test_a_partition_without_numeric_progress_says_so(logged_in_client, prod, partition_history):
    partition_history.points.append(make.CommitPoint(make.now(), None, {"file": "a.log"}, 1, False))
    html = logged_in_client.get(
        SOURCE, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="progress"
    ).content.decode()
    assert "its offset has no numeric field to chart" in html


def test_a_source_lists_its_rewinds_tasks_and_masked_config(logged_in_client, prod):
    html = logged_in_client.get(SOURCE).content.decode()
    rewinds = html.split('id="rewinds"')[1].split("</table>")[0]
    assert "table_00007" in rewinds and ">500<" in rewinds and ">100<" in rewinds
    tasks = html.split('id="tasks"')[1].split("</table>")[0]
    assert "RUNNING" in tasks and "FAILED" in tasks
    assert "java.sql.SQLException: gone" in html
    assert "hunter2" not in html and "s3cret" not in html
    assert "********" in html
    assert "jdbc:postgresql://app:********@db:5432/app" in html


def test_key_drift_is_shown_with_both_forms(logged_in_client, prod):
    make.drift(
        prod,
        "jdbc-source",
        '{"a":1,"b":2}',
        [
            {
                "topic": "connect-offsets",
                "key": '["jdbc-source",{"b":2,"a":1}]',
                "offset": {"x": 9},
            },
            {
                "topic": "connect-offsets",
                "key": '["jdbc-source",{"a":1,"b":2}]',
                "offset": {"x": 3},
            },
        ],
    )
    html = logged_in_client.get(SOURCE).content.decode()
    drift = html.split('id="key-drift"')[1].split("</table>")[0]
    assert drift.count("→") == 2


def test_a_sink_shows_its_topic_partitions_with_no_commit_as_such(logged_in_client, prod):
    html = logged_in_client.get(SINK).content.decode()
    assert "3 topic-partitions." in html
    row = html.split('data-partition="payments-0"')[1].split("</tr>")[0]
    assert 'data-field="committed"><span class="muted">no commit</span>' in row
    orders = html.split('data-partition="orders-1"')[1].split("</tr>")[0]
    assert ">91<" in orders and ">101<" in orders and 'data-field="lag-ms">5s<' in orders


def test_a_sink_charts_its_lag_over_time(logged_in_client, prod):
    html = logged_in_client.get(SINK).content.decode()
    assert path_points(html, "lag") == 12
    assert path_points(html, "lag-time") == 12
    assert 'data-chart="commits"' not in html


def test_charts_without_data_say_so(logged_in_client, prod):
    make.snapshot(prod, "quiet")
    html = logged_in_client.get("/clusters/prod/connectors/quiet/").content.decode()
    assert "No data yet." in html.split('data-chart="commits"')[1]


def test_the_detail_page_shows_a_failed_refresh(logged_in_client, prod):
    make.run(prod, RefreshRun.Status.FAILED, ago=3, error="Broker unreachable")
    html = logged_in_client.get(SOURCE).content.decode()
    assert "Broker unreachable" in html
    assert "Showing the results of the last successful refresh" in html


def test_export_json_is_the_kip875_document_of_a_source(logged_in_client, prod):
    SourceOffset.objects.filter(identity__contains="table_00001").update(
        offset=None, offset_text=None
    )
    make.source_offsets(prod, "jdbc-source", 1, topic="connect-offsets-own", effective=False)
    response = logged_in_client.get(SOURCE + "offsets.json")
    assert response.status_code == 200
    assert re.fullmatch(
        r'attachment; filename="prod-jdbc-source-offsets-\d{8}T\d{4}Z\.json"',
        response["Content-Disposition"],
    )
    document = json.loads(response.content)
    # Tombstoned partitions have no offset, and shadowed copies are not what the runtime uses.
    assert len(document["offsets"]) == 119
    assert document["offsets"][0] == {"partition": {"table": "table_00000"}, "offset": {"id": 0}}


def test_export_json_of_a_sink_has_kafka_topic_partition_and_offset(logged_in_client, prod):
    document = json.loads(logged_in_client.get(SINK + "offsets.json").content)
    assert document == {
        "offsets": [
            {
                "partition": {"kafka_topic": "orders", "kafka_partition": 0},
                "offset": {"kafka_offset": 90},
            },
            {
                "partition": {"kafka_topic": "orders", "kafka_partition": 1},
                "offset": {"kafka_offset": 91},
            },
        ]
    }


def test_export_json_of_an_unknown_connector_is_404_and_needs_login(client, logged_in_client, prod):
    assert logged_in_client.get("/clusters/prod/connectors/nope/offsets.json").status_code == 404
    logged_in_client.logout()
    assert client.get(SOURCE + "offsets.json").status_code == 302


def test_a_sink_that_keeps_its_offsets_elsewhere_shows_no_lag_at_all(logged_in_client, prod):
    make.snapshot(prod, "bq-sink", "sink", offsets_managed_externally=True, lag_records=None)
    make.sink_lags(prod, "bq-sink", "events", 2, committed=None, lag_records=358)
    make.lag_samples(prod, "bq-sink", "events", 2, 3)
    html = logged_in_client.get("/clusters/prod/connectors/bq-sink/").content.decode()
    assert "Not tracked: this sink keeps its offsets outside Connect" in html
    assert 'data-chart="lag"' not in html
    row = html.split('data-partition="events-0"')[1].split("</tr>")[0]
    assert "no commit" in row and "358" not in row
    assert 'data-field="last-commit"' not in html


def polls(html: str, element_id: str, seconds: int = 15) -> bool:
    tag = html.split(f'id="{element_id}"')[1].split(">")[0]
    return f'hx-trigger="every {seconds}s"' in tag and 'hx-swap="outerHTML"' in tag


def test_a_sinks_figures_lag_charts_and_partitions_poll(logged_in_client, prod):
    html = logged_in_client.get(SINK).content.decode()
    assert polls(html, "facts") and polls(html, "history-charts") and polls(html, "partitions")
    assert 'data-chart="lag"' in html.split('id="history-charts"')[1].split("</section>")[0]


def test_a_sources_progress_chart_polls_once_drawn(logged_in_client, prod, partition_history):
    partition_history.points.extend(make.history(5))
    html = logged_in_client.get(
        SOURCE, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="progress"
    ).content.decode()
    assert polls(html, "progress")
    assert 'hx-get="/clusters/prod/connectors/jdbc-source/?partition=' in html


def test_the_polled_figures_answer_with_their_part_only_in_few_queries(
    logged_in_client, prod, settings, django_assert_max_num_queries
):
    settings.PAGE_POLL_SECONDS = 3
    logged_in_client.get(SINK)  # the run's fragments cached
    for target, starts in (("facts", '<section class="facts"'), ("history-charts", "<div")):
        with django_assert_max_num_queries(6):
            html = logged_in_client.get(
                SINK, HTTP_HX_REQUEST="true", HTTP_HX_TARGET=target
            ).content.decode()
        assert html.lstrip().startswith(starts) and polls(html, target, 3)
        assert 'id="partitions"' not in html and "<h1>" not in html
    facts = logged_in_client.get(SINK, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="facts")
    assert 'data-field="lag"' in facts.content.decode()


def test_each_task_shows_its_worker_and_error_with_the_whole_trace_folded(logged_in_client, prod):
    ConnectorSnapshot.objects.filter(cluster=prod, name="jdbc-source").update(
        task_details={
            "0": {"worker_id": "w1:8083", "trace": ""},
            "1": {
                "worker_id": "w2:8083",
                "trace": "java.sql.SQLException: <script>gone</script>\n\tat Db.query(Db.java:7)",
            },
        }
    )
    html = logged_in_client.get(SOURCE).content.decode()
    tasks = html.split('id="tasks"')[1].split("</table>")[0]
    running = tasks.split('data-task="0"')[1].split("</tr>")[0]
    assert "<code>w1:8083</code>" in running and "<details" not in running
    failed = tasks.split('data-task="1"')[1].split("</tr>")[0]
    assert "<code>w2:8083</code>" in failed
    # The first line beside the state; the whole trace folded under it; Kafka's text escaped.
    assert "<summary>java.sql.SQLException: &lt;script&gt;gone&lt;/script&gt;</summary>" in failed
    assert "\tat Db.query(Db.java:7)</pre></details>" in failed
    assert "<script>gone" not in html


def test_a_sink_with_no_commit_yet_says_where_its_lag_counts_from(logged_in_client, prod):
    ConnectorSnapshot.objects.filter(cluster=prod, name="s3-sink").update(
        uncommitted_partitions=1, lag_status="ERR"
    )
    html = logged_in_client.get(SINK).content.decode()
    facts = html.split('id="facts"')[1].split("</section>")[0]
    assert 'data-reason="no commit yet"' in facts
    assert "1 topic-partition without a commit yet" in facts
    row = html.split('data-partition="payments-0"')[1].split("</tr>")[0]
    assert 'data-field="lag-records">50<' in row


def test_the_charts_offer_ranges_kept_across_polls_and_a_bad_one_falls_back(logged_in_client, prod):
    html = logged_in_client.get(SOURCE).content.decode()
    nav = html.split('class="chart-range"')[1].split("</nav>")[0]
    assert re.findall(r'data-range="([^"]+)"', nav) == ["1h", "6h", "24h", "7d", "all"]
    assert re.findall(r'data-range="([^"]+)" aria-current="true"', nav) == ["24h"]
    assert "the last 24 h" in html.split('data-chart="commits"')[1]
    hour = logged_in_client.get(SOURCE + "?range=1h").content.decode()
    # 36 buckets of 5 minutes: the last hour holds about 12 of them.
    assert 11 <= path_points(hour, "commits") <= 12
    assert "the last 1 h" in hour.split('data-chart="commits"')[1]
    # The charts' poll asks for the same range.
    poll = hour.split('id="history-charts"')[1].split(">")[0]
    assert "range=1h" in poll
    polled = logged_in_client.get(
        SOURCE + "?range=1h", headers={"HX-Request": "true", "HX-Target": "history-charts"}
    ).content.decode()
    assert path_points(polled, "commits") == path_points(hour, "commits")
    for value in ("all", "bogus", "7"):
        response = logged_in_client.get(SOURCE + f"?range={value}")
        assert response.status_code == 200
        assert path_points(response.content.decode(), "commits") == 36
    bogus = logged_in_client.get(SOURCE + "?range=bogus").content.decode()
    assert 'data-range="24h" aria-current="true"' in bogus


def bucket(html: str, chart: str) -> str:
    figure = html.split(f'data-chart="{chart}"')[1].split("</figure>")[0]
    return re.search(r'data-field="bucket">([^<]+)<', figure).group(1)


def test_every_chart_of_a_source_follows_the_range_and_names_its_bucket(
    logged_in_client, prod, partition_history
):
    # Three hours of commits, a minute apart, each with its source position's age.
    points = [
        dataclasses.replace(point, position_age_ms=1000 * index)
        for index, point in enumerate(make.history(180))
    ]
    partition_history.points.extend(points)
    progress = {"HX-Request": "true", "HX-Target": "progress"}
    for range_, drawn in (("1h", range(59, 62)), ("24h", [180]), ("all", [180])):
        page = logged_in_client.get(SOURCE + f"?range={range_}").content.decode()
        assert f'?range={range_}" hx-trigger="load"' in page
        assert bucket(page, "commits") == "per 5 min"
        html = logged_in_client.get(SOURCE + f"?range={range_}", headers=progress)
        html = html.content.decode()
        assert path_points(html, "progress") in drawn
        assert path_points(html, "position-age") in drawn
        assert bucket(html, "progress") == "every commit"
        assert bucket(html, "position-age") == "at each commit"
        # Its poll and the partitions' "chart" links keep the range.
        assert f"&amp;range={range_}" in html.split('id="progress"')[1].split(">")[0]
        assert f'id="chart-range-value" name="range" value="{range_}"' in html


def test_a_long_range_sums_the_charts_buckets_to_draw_all_of_it(logged_in_client, prod):
    # Two days of lag samples, a minute apart: more than a chart draws one by one.
    make.lag_samples(prod, "s3-sink", "orders", 1, 2 * 24 * 60)
    html = logged_in_client.get(SINK + "?range=7d").content.decode()
    assert bucket(html, "lag") == bucket(html, "lag-time") == "worst per 10 min"
    # Two days of ten minutes: every sample is in a drawn bucket, the oldest one too.
    assert 288 <= path_points(html, "lag") <= 290
    hour = logged_in_client.get(SINK + "?range=1h").content.decode()
    assert bucket(hour, "lag") == "a sample per refresh, at most one a minute"
    # Each sample of the hour: these 60 and the fixture's 12 (taken apart from them).
    assert 71 <= path_points(hour, "lag") <= 73
    # A week of five-minute commit buckets: summed by the hour.
    CommitBucket.objects.filter(connector="jdbc-source").delete()
    make.commit_buckets(prod, "jdbc-source", 7 * 24 * 12)
    source = logged_in_client.get(SOURCE + "?range=7d").content.decode()
    assert bucket(source, "commits") == "per hour"
    assert 168 <= path_points(source, "commits") <= 170
    assert bucket(logged_in_client.get(SOURCE + "?range=1h").content.decode(), "commits") == (
        "per 5 min"
    )


def test_the_charts_mark_a_pause_a_failure_a_control_and_an_applied_edit(
    logged_in_client, prod, admin_user
):
    now = timezone.now()
    for minutes, target, runtime, failed in (
        (180, "STOPPED", "STOPPED", 0),
        (9, "PAUSED", "PAUSED", 0),
        (6, "STARTED", "RUNNING", 0),
        (4, "STARTED", "RUNNING", 1),
    ):
        ConnectorStateChange.objects.create(
            cluster=prod,
            connector="s3-sink",
            at=now - timedelta(minutes=minutes),
            target_state=target,
            runtime_state=runtime,
            failed_tasks=failed,
        )
    AuditEvent.objects.create(
        cluster=prod,
        connector="s3-sink",
        action=AuditEvent.Action.STOPPED,
        actor_name="alice",
        at=now - timedelta(minutes=8),
    )
    edit = make_edit(prod, admin_user, state="applied", connector="s3-sink")
    AuditEvent.objects.create(
        cluster=prod,
        connector="s3-sink",
        edit=edit,
        action=AuditEvent.Action.APPLIED,
        actor_name="bob",
        at=now - timedelta(minutes=5),
    )
    html = logged_in_client.get(SINK + "?range=1h").content.decode()
    lag = html.split('data-chart="lag"')[1].split("</figure>")[0]
    kinds = re.findall(r'data-event="([a-z]+)"><title>([^<]+)</title>', lag)
    # The stop of three hours ago is out of the hour chosen.
    assert [kind for kind, _ in kinds] == ["paused", "control", "running", "edit", "failed"]
    titles = dict(kinds)
    assert titles["paused"].startswith("paused (seen by the refresh of ")
    assert titles["control"].startswith("stopped by alice from the dashboard at ")
    assert titles["edit"].startswith(f"edit #{edit.pk} applied at ")
    assert titles["failed"].startswith("1 task FAILED (")
    assert f'<a href="/clusters/prod/edits/{edit.pk}/" class="event-link">' in lag
    assert "5 events" in lag and "5 events marked" in lag
    day = logged_in_client.get(SINK).content.decode().split('data-chart="lag"')[1]
    assert day.split("</figure>")[0].count("data-event=") == 6


def test_an_edit_settled_as_applied_by_reconciling_is_marked_and_a_failed_one_is_not(
    logged_in_client, prod, admin_user
):
    now = timezone.now()
    for minutes, state in ((7, "applied"), (3, "failed")):
        edit = make_edit(prod, admin_user, state=state, connector="s3-sink")
        AuditEvent.objects.create(
            cluster=prod,
            connector="s3-sink",
            edit=edit,
            action=AuditEvent.Action.RECONCILED,
            actor_name="reconcile_edits",
            at=now - timedelta(minutes=minutes),
        )
    html = logged_in_client.get(SINK + "?range=1h").content.decode()
    lag = html.split('data-chart="lag"')[1].split("</figure>")[0]
    titles = re.findall(r'data-event="edit"><title>([^<]+)</title>', lag)
    assert len(titles) == 1 and titles[0].startswith(f"edit #{edit.pk - 1} applied at ")


def test_the_last_commit_in_the_strip_counts_on_between_polls(logged_in_client, prod):
    # static/js/live.js ticks every element with data-age-seconds from the age written here.
    moved = timezone.now() - timedelta(seconds=75)
    ConnectorSnapshot.objects.filter(cluster=prod).update(
        last_commit_at=moved, last_commit_seen=True
    )
    for page, words in ((SOURCE, ""), (SINK, "offset moved, seen ")):
        html = logged_in_client.get(page).content.decode()
        strip = html.split('data-field="last-commit">')[1].split("</dd>")[0]
        assert re.search(words + r'<span data-age-seconds="7[5-9]">1m 1[5-9]s</span> ago', strip)
