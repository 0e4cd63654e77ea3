"""Large shapes without a broker: an edit of 20,000 partitions shows a summary and pages its
diff, typed partitions are parsed and checked, and oversized uploads are refused plainly."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from dashboard.pages.edits.forms import SinkStageForm, SourceStageForm
from offsets.edits.imports import IMPORT_MAX_BYTES
from offsets.formats import jackson
from offsets.models import OffsetEdit, OffsetEditChange
from tests.support import factories

PARTITIONS = 20_000
PAGE_BOUND = 300_000  # bytes: one page of 100 rows with room; all 20,000 rows take ~10 MB


@pytest.fixture
def cluster(db):
    return factories.cluster("c1")


def partition(index: int) -> dict:
    return {"file": f"/data/part-{index:05d}.log"}


def make_restore(cluster, user) -> OffsetEdit:
    """A restore of 20,000 partitions: every 100th is new, every 100th (+1) deleted."""
    edit = OffsetEdit.objects.create(
        cluster=cluster,
        connector="file-src",
        connector_type="source",
        strategy="restore",
        created_by=user,
        primary_topic="connect-offsets",
        parameters={"at": "2026-01-01T00:00:00+00:00"},
    )
    changes = []
    for i in range(PARTITIONS):
        before = None if i % 100 == 1 else {"position": i}
        after = None if i % 100 == 2 else {"position": 0}
        changes.append(
            OffsetEditChange(
                edit=edit,
                position=i,
                partition=partition(i),
                key_bytes=jackson.dumps_key("file-src", partition(i)),
                before=before,
                before_bytes=None if before is None else jackson.dumps(before),
                after=after,
                after_bytes=None if after is None else jackson.dumps(after),
                is_new=before is None,
                is_delete=after is None,
            )
        )
    OffsetEditChange.objects.bulk_create(changes, batch_size=2000)
    return edit


def diff_rows(html: str) -> list[str]:
    return [part.split('"', 1)[0] for part in html.split('data-partition="')[1:]]


def label(index: int) -> str:
    return jackson.dumps_text(partition(index)).replace('"', "&quot;")


@pytest.mark.db_engine  # 20,000 rows written in bulk and paged by the engine
def test_a_restore_of_20000_partitions_shows_a_summary_and_one_page_of_its_diff(
    client, cluster, editor
):
    edit = make_restore(cluster, editor)
    client.force_login(editor)

    response = client.get(f"/clusters/c1/edits/{edit.pk}/")

    assert response.status_code == 200
    assert len(response.content) < PAGE_BOUND
    html = response.content.decode()
    assert "Diff: 20,000 partitions" in html
    assert "19,600 changed, 200 added, 200 deleted" in html
    assert diff_rows(html) == [label(i) for i in range(100)]
    assert "page 1 of 200" in html


@pytest.mark.db_engine  # 20,000 rows written in bulk and paged by the engine
def test_the_diff_pages_reach_the_last_partition_and_htmx_gets_the_diff_alone(
    client, cluster, editor
):
    edit = make_restore(cluster, editor)
    client.force_login(editor)
    page = f"/clusters/c1/edits/{edit.pk}/"

    html = client.get(page + "?page=200").content.decode()
    assert diff_rows(html) == [label(i) for i in range(19_900, PARTITIONS)]
    assert "page 200 of 200" in html
    # Past the end, or not a page number: the last page, or the first.
    assert diff_rows(client.get(page + "?page=9999").content.decode())[-1] == label(19_999)
    assert diff_rows(client.get(page + "?page=x").content.decode())[0] == label(0)

    response = client.get(page + "?page=2", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="edit-diff")
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="card" id="edit-diff">')
    assert diff_rows(html)[0] == label(100) and 'id="edit-status"' not in html


@pytest.mark.db_engine  # 20,000 rows written in bulk and paged by the engine
def test_a_refused_action_on_a_large_edit_answers_the_page_with_one_page_of_its_diff(
    client, cluster, editor
):
    edit = make_restore(cluster, editor)
    client.force_login(editor)  # an editor cannot approve
    response = client.post(f"/clusters/c1/edits/{edit.pk}/approve/")
    assert response.status_code == 403
    assert len(response.content) < PAGE_BOUND
    assert len(diff_rows(response.content.decode())) == 100


def test_a_sink_edit_of_many_typed_partitions_quotes_the_first_of_its_inputs(
    client, cluster, editor
):
    edit = OffsetEdit.objects.create(
        cluster=cluster,
        connector="wide-sink",
        connector_type="sink",
        strategy="earliest",
        created_by=editor,
        group_id="connect-wide-sink",
        parameters={"partitions": [f"wide-{p}" for p in range(PARTITIONS)]},
    )
    client.force_login(editor)
    html = client.get(f"/clusters/c1/edits/{edit.pk}/").content.decode()
    assert len(html) < PAGE_BOUND
    assert "&quot;wide-9&quot;,&quot;and 19,990 more&quot;" in html


# --- Uploads ----------------------------------------------------------------------------------


def test_an_upload_over_the_import_limit_is_refused_with_its_size_and_stages_nothing(
    client, cluster, editor
):
    client.force_login(editor)
    upload = SimpleUploadedFile("offsets.json", b" " * (IMPORT_MAX_BYTES + 1))
    response = client.post("/clusters/c1/import/", {"file": upload, "dry_run": "on"})
    assert response.status_code == 400
    assert "The file is 20.0 MB: an import takes at most 20 MB." in response.content.decode()
    assert len(response.content) < 100_000
    assert not OffsetEdit.objects.exists()


def test_an_api_body_over_the_upload_limit_answers_413_saying_so(client, cluster, editor, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    client.force_login(editor)
    document = {"file-src": [{"partition": partition(i), "offset": None} for i in range(50)]}
    for url, body in (
        ("/api/v1/edits/import/", {"cluster": "c1", "document": document}),
        ("/api/v1/edits/", {"cluster": "c1", "connector": "x", "strategy": "earliest"} | document),
    ):
        response = client.post(url, json.dumps(body), content_type="application/json")
        assert response.status_code == 413, url
        assert "larger than 1,000 bytes, the most the API reads" in response.json()["detail"]
    assert not OffsetEdit.objects.exists()


# --- Typed partitions -------------------------------------------------------------------------


SINK_PARTITIONS = {("orders", p) for p in range(6)} | {("my-topic-2", 3)}


def sink_form(partitions: str) -> SinkStageForm:
    return SinkStageForm(
        {"strategy": "earliest", "partitions": partitions}, partitions=SINK_PARTITIONS
    )


def test_the_sink_form_reads_typed_partitions_in_either_form_once_each_in_order():
    form = sink_form("orders-5, orders/0\nmy-topic-2-3  orders-5")
    assert form.is_valid(), form.errors
    assert form.stage_request().partitions == (("orders", 5), ("orders", 0), ("my-topic-2", 3))
    form = sink_form("  ")
    assert form.is_valid() and form.stage_request().partitions is None  # none typed: all


def test_the_sink_form_names_unknown_and_malformed_partitions_and_counts_the_rest():
    form = sink_form("orders-6")
    assert not form.is_valid()
    assert form.errors["partitions"] == ["orders-6 is not a partition of the sink's topics."]
    form = sink_form(" ".join(f"orders-{p}" for p in range(6, 26)))
    assert form.errors["partitions"] == [
        "orders-6, orders-7, orders-8, orders-9, orders-10 and 15 more are not partitions of "
        "the sink's topics."
    ]
    form = sink_form("orders orders-x -3")
    assert form.errors["partitions"] == [
        "'orders', 'orders-x', '-3': not a topic-partition such as orders-0."
    ]


def test_the_source_form_takes_a_typed_partition_in_any_field_order_and_names_an_unknown_one():
    known = {'{"a":1,"b":"x"}'}
    form = SourceStageForm(
        {"strategy": "delete", "existing": '{"b": "x", "a": 1}'}, partitions=known
    )
    assert form.is_valid(), form.errors
    assert form.stage_request().partition == {"b": "x", "a": 1}
    form = SourceStageForm({"strategy": "delete", "existing": '{"a": 2}'}, partitions=known)
    assert not form.is_valid()
    assert form.errors["existing"][0].startswith('{"a":2} has no offset in the topic')


@pytest.mark.db_engine  # 20,000 rows written in bulk and paged by the engine
def test_the_api_gives_a_large_edit_with_counts_and_one_page_of_its_diff(
    client, cluster, editor, user
):
    edit = make_restore(cluster, editor)
    client.force_login(user)
    url = f"/api/v1/edits/{edit.pk}/"

    response = client.get(url)
    assert response.status_code == 200 and len(response.content) < PAGE_BOUND
    body = response.json()
    assert body["counts"] == {"total": 20_000, "changed": 19_600, "added": 200, "deleted": 200}
    assert [c["partition"] for c in body["changes"]] == [partition(i) for i in range(100)]
    assert body["changes_page"] == {
        "number": 1,
        "pages": 200,
        "per_page": 100,
        "next": f"{url}?page=2",
        "previous": None,
    }
    last = client.get(f"{url}?page=200").json()
    assert last["changes"][-1]["partition"] == partition(19_999)
    assert last["changes_page"]["next"] is None
    assert client.get(f"{url}?page=0").status_code == 400
    assert client.get(f"{url}?page=x").status_code == 400
