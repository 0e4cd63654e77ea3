"""Connectors with many partitions: the edit page, the stage forms and imports stay bounded.

A Connect cluster of the module's own, on the session's broker, holds a source with 20,000
partitions and a sink reading a topic of 250 partitions. The bounds asserted are far below what rendering every partition takes
(about 10 MB for the source's page), and far above one page of rows.
"""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from offsets.formats import jackson
from offsets.kafka import admin, groups, reading
from offsets.models import Cluster, OffsetEdit
from tests.support.connect_sim import commit_source_offsets, create_connector

pytestmark = pytest.mark.integration

SOURCE = "large-src"
SOURCE_PARTITIONS = 20_000
SINK = "wide-sink"
TOPIC = "wide"
TOPIC_PARTITIONS = 250

SOURCE_PAGE = f"/clusters/large/connectors/{SOURCE}/edits/"
SINK_PAGE = f"/clusters/large/connectors/{SINK}/edits/"
PAGE_BOUND = 300_000  # bytes: one page of 100 rows and the rest of the page, with room


def partition(index: int) -> dict:
    return {"file": f"/data/part-{index:05d}.log"}


def identity(index: int) -> str:
    return jackson.dumps_text(partition(index))


# A Connect cluster of its own on the session's broker: its internal topics, data topic and
# connector names are this module's alone.
TOPICS = {
    "configs_topic": "large-connect-configs",
    "offsets_topic": "large-connect-offsets",
    "status_topic": "large-connect-status",
}


@pytest.fixture(scope="module")
def large_broker(kafka_bootstrap) -> dict:
    settings = {"bootstrap.servers": kafka_bootstrap}
    compact = {"cleanup.policy": "compact"}
    admin.create_topics(
        settings,
        [
            admin.TopicSpec(TOPICS["configs_topic"], 1, compact),
            admin.TopicSpec(TOPICS["offsets_topic"], 25, compact),
            admin.TopicSpec(TOPICS["status_topic"], 5, compact),
            admin.TopicSpec(TOPIC, TOPIC_PARTITIONS, {}),
        ],
    )
    create_connector(
        settings,
        SOURCE,
        {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "topic": "large",
        },
        topics=TOPICS,
    )
    commit_source_offsets(
        settings,
        TOPICS["offsets_topic"],
        [
            (jackson.dumps_key(SOURCE, partition(i)), jackson.dumps({"position": i}))
            for i in range(SOURCE_PARTITIONS)
        ],
    )
    create_connector(
        settings,
        SINK,
        {"connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": TOPIC},
        topics=TOPICS,
    )
    groups.alter_offsets(
        settings, f"connect-{SINK}", {(TOPIC, p): 0 for p in range(TOPIC_PARTITIONS)}
    )
    return settings


@pytest.fixture
def cluster(db, large_broker):
    return Cluster.objects.create(
        name="large", bootstrap_servers=large_broker["bootstrap.servers"], **TOPICS
    )


@pytest.fixture
def as_editor(client, editor):
    client.force_login(editor)
    return client


def rows_of(html: str) -> list[str]:
    """The partitions the current-offsets table shows, in order."""
    return [
        part.split('"', 1)[0] for part in html.split('<tr data-partition="')[1:] if "</td>" in part
    ]


# --- The source's page ------------------------------------------------------------------------


def test_the_page_of_a_source_with_20000_partitions_shows_one_page_of_them(as_editor, cluster):
    response = as_editor.get(SOURCE_PAGE + "?strategy=set")

    assert response.status_code == 200
    assert len(response.content) < PAGE_BOUND
    html = response.content.decode()
    assert len(rows_of(html)) == 100
    assert "page 1 of 200" in html
    assert "20,000 partitions" in html
    # The stage form names a partition by typing it: no option per partition.
    assert html.count("<option") <= 100
    assert 'name="existing"' in html and "<select" not in html


def test_paging_and_the_filter_reach_the_last_partitions_of_a_large_source(as_editor, cluster):
    html = as_editor.get(SOURCE_PAGE + "?page=200").content.decode()
    shown = rows_of(html)
    assert len(shown) == 100 and "page 200 of 200" in html
    assert shown[-1] == jackson.dumps_text(partition(SOURCE_PARTITIONS - 1)).replace('"', "&quot;")

    html = as_editor.get(SOURCE_PAGE + "?q=part-1999").content.decode()
    assert len(rows_of(html)) == 10  # part-19990 to part-19999
    assert "10 of 20,000 partitions" in html

    # A page past the end shows the last one; htmx gets the table alone.
    response = as_editor.get(
        SOURCE_PAGE + "?page=999", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="current-offsets"
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="card" id="current-offsets"')
    assert "page 200 of 200" in html and 'id="stage"' not in html


def test_a_partition_typed_into_the_stage_form_is_checked_against_the_live_offsets(
    as_editor, cluster
):
    response = as_editor.post(
        SOURCE_PAGE,
        {"strategy": "set", "existing": '{"file": "/data/nope.log"}', "offset": '{"position": 1}'},
    )
    assert response.status_code == 400
    assert (
        "{&quot;file&quot;:&quot;/data/nope.log&quot;} has no offset" in response.content.decode()
    )
    assert len(response.content) < PAGE_BOUND
    assert not OffsetEdit.objects.exists()

    last = partition(SOURCE_PARTITIONS - 1)
    response = as_editor.post(
        SOURCE_PAGE,
        {"strategy": "set", "existing": json.dumps(last), "offset": '{"position": 1}'},
    )
    assert response.status_code == 302
    (change,) = OffsetEdit.objects.get().changes.all()
    assert bytes(change.key_bytes) == jackson.dumps_key(SOURCE, last)


# --- The sink's page --------------------------------------------------------------------------


@pytest.fixture
def asked_bounds(monkeypatch) -> list[int]:
    """How many partitions each log-bounds request of the page asked about."""
    asked: list[int] = []
    real = reading.confirmed_watermarks

    def counting(settings, partitions, **kwargs):
        partitions = list(partitions)
        asked.append(len(partitions))
        return real(settings, partitions, **kwargs)

    monkeypatch.setattr(reading, "confirmed_watermarks", counting)
    return asked


def test_the_page_of_a_wide_sink_reads_the_log_bounds_of_the_shown_partitions_only(
    as_editor, cluster, asked_bounds
):
    html = as_editor.get(SINK_PAGE + "?strategy=offset").content.decode()
    assert rows_of(html) == [f"{TOPIC}-{p}" for p in range(100)]
    assert asked_bounds == [100]
    assert 'name="partitions"' in html and "<select" not in html

    html = as_editor.get(SINK_PAGE + "?page=3").content.decode()
    assert rows_of(html) == [f"{TOPIC}-{p}" for p in range(200, TOPIC_PARTITIONS)]
    assert asked_bounds == [100, 50]


def test_partitions_typed_into_the_sink_form_are_checked_against_its_topics(as_editor, cluster):
    response = as_editor.post(
        SINK_PAGE, {"strategy": "delete-offsets", "partitions": f"{TOPIC}-250 {TOPIC}-7"}
    )
    assert response.status_code == 400
    assert f"{TOPIC}-250 is not a partition of" in response.content.decode()

    response = as_editor.post(
        SINK_PAGE, {"strategy": "delete-offsets", "partitions": f"{TOPIC}-249,\n{TOPIC}/7"}
    )
    assert response.status_code == 302
    changes = OffsetEdit.objects.get().changes.all()
    assert [(c.topic, c.kafka_partition, c.after) for c in changes] == [
        (TOPIC, 7, None),
        (TOPIC, 249, None),
    ]


def test_nothing_to_change_on_a_wide_sink_names_a_few_partitions_and_counts_the_rest(
    as_editor, cluster
):
    response = as_editor.post(SINK_PAGE, {"strategy": "earliest"})  # every offset is 0 already
    assert response.status_code == 400
    html = response.content.decode()
    assert f"{TOPIC}-0: already 0" in html and "and 240 more" in html
    assert f"{TOPIC}-249: already 0" not in html


# --- Imports ----------------------------------------------------------------------------------


def large_document() -> dict:
    return {
        SOURCE: [
            {"partition": partition(i), "offset": {"position": i + 1}}
            for i in range(SOURCE_PARTITIONS)
        ]
    }


def test_a_dry_run_import_of_20000_partitions_answers_a_summary_and_one_page_of_rows(
    as_editor, cluster
):
    upload = SimpleUploadedFile("offsets.json", jackson.dumps(large_document()))
    response = as_editor.post("/clusters/large/import/", {"file": upload, "dry_run": "on"})

    assert response.status_code == 200
    assert len(response.content) < PAGE_BOUND
    html = response.content.decode()
    assert html.count("<tr class=") == 100
    assert "20,000 changed" in html and "19,900 more not shown" in html
    assert not OffsetEdit.objects.exists()


def test_the_import_api_answers_counts_and_the_first_rows_of_a_large_document(as_editor, cluster):
    body = {"cluster": "large", "document": large_document(), "dry_run": True}
    response = as_editor.post("/api/v1/edits/import/", body, content_type="application/json")

    assert response.status_code == 200, response.content[:500]
    assert len(response.content) < 100_000
    (preview,) = response.json()["previews"]
    assert preview["counts"] == {"total": 20_000, "changed": 20_000, "added": 0, "deleted": 0}
    assert len(preview["changes"]) == 100 and preview["changes_not_shown"] == 19_900

    body["dry_run"] = False
    response = as_editor.post("/api/v1/edits/import/", body, content_type="application/json")

    assert response.status_code == 201
    assert len(response.content) < 100_000
    (edit,) = response.json()["edits"]
    assert edit["counts"]["total"] == 20_000 and edit["changes_not_shown"] == 19_900
    assert OffsetEdit.objects.get().changes.count() == 20_000
