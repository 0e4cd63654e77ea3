"""A sink's own store set with the sink strategies (store-offset): each target computed
against the offsets the store holds and each partition's log, clamped and warned like a
Connect-group sink, the strategy kept and staged again the same way; and through the API."""

from datetime import UTC, datetime, timedelta

import pytest

from offsets.edits import workflow
from offsets.edits.errors import EditInputError, NothingToChange
from offsets.edits.kinds.sink_store import kind as sink_store
from offsets.edits.kinds.sink_store.kind import store_request, store_strategy_words
from offsets.edits.workflow import StageRequest, StoreChange, describe
from offsets.models import OffsetEdit
from tests.support import factories as make
from tests.support.sink_store_fakes import store_sink

pytestmark = pytest.mark.django_db


@pytest.fixture
def prod():
    return make.cluster("prod")


@pytest.fixture
def sink(monkeypatch, prod, tmp_path):
    # The file holds orders-0 = 5 and orders-1 = 8; both logs hold offsets 2 to 10.
    return store_sink(monkeypatch, prod, tmp_path)


def stage(prod, editor, strategy, **inputs):
    request = StageRequest(strategy=strategy, **inputs)
    return workflow.stage(cluster=prod, connector="files", user=editor, change=StoreChange(request))


def targets(edit) -> dict:
    return {
        (c.topic, c.kafka_partition): (c.before["kafka_offset"], c.after["kafka_offset"])
        for c in edit.changes.all()
    }


@pytest.mark.parametrize(
    ("strategy", "inputs", "expected"),
    [
        ("earliest", {}, {("orders", 0): (5, 2), ("orders", 1): (8, 2)}),
        ("latest", {}, {("orders", 0): (5, 10), ("orders", 1): (8, 10)}),
        ("offset", {"value": 7}, {("orders", 0): (5, 7), ("orders", 1): (8, 7)}),
        ("shift", {"value": -2}, {("orders", 0): (5, 3), ("orders", 1): (8, 6)}),
        ("datetime", {"at": datetime(2026, 11, 1, tzinfo=UTC)}, {("orders", 0): (5, 6)}),
        ("duration", {"duration": timedelta(hours=1)}, {("orders", 0): (5, 6)}),
    ],
)
def test_each_sink_strategy_moves_the_stores_offsets(
    prod, editor, sink, strategy, inputs, expected
):
    edit = stage(prod, editor, strategy, **inputs)
    got = targets(edit)
    # At a time, orders-0 moves to 6 and orders-1 goes back from 8 to 6.
    assert {tp: got[tp] for tp in expected} == expected
    assert edit.strategy == "store-offset"
    assert (edit.parameters["as"], edit.parameters["store"]["path"]) == (strategy, sink.path)


def test_targets_outside_the_log_are_clamped_with_a_warning(prod, editor, sink):
    edit = stage(prod, editor, "shift", value=-4)
    assert targets(edit) == {("orders", 0): (5, 2), ("orders", 1): (8, 4)}
    [clamped] = edit.changes.get(topic="orders", kafka_partition=0).warnings
    assert clamped == (
        "1 is before the log start of orders-0 (records removed by retention); clamped to 2."
    )
    edit = stage(prod, editor, "offset", value=12)
    assert targets(edit) == {("orders", 0): (5, 10), ("orders", 1): (8, 10)}


def test_a_shift_leaves_a_partition_the_store_has_no_offset_for(prod, editor, sink):
    sink.holds("orders\\:0=5\n")
    edit = stage(prod, editor, "shift", value=1)
    assert targets(edit) == {("orders", 0): (5, 6)}
    edit = stage(prod, editor, "earliest", partitions=(("orders", 1),))
    assert [(c.before, c.after, c.is_new) for c in edit.changes.all()] == [
        (None, {"kafka_offset": 2}, True)
    ]


def test_nothing_to_change_and_a_strategy_without_one_offset_are_refused(prod, editor, sink):
    sink.holds("orders\\:0=2\norders\\:1=2\n")
    with pytest.raises(NothingToChange, match="already holds that offset in the store"):
        stage(prod, editor, "earliest")
    with pytest.raises(EditInputError) as refused:
        stage(prod, editor, "copy-group", group="other")
    assert refused.value.field == "as"
    with pytest.raises(EditInputError) as refused:
        stage(prod, editor, "shift")
    assert refused.value.field == "value"


def test_an_unreadable_store_is_refused_saying_why(prod, editor, sink):
    sink.holds("orders:0=5\n")
    with pytest.raises(EditInputError, match="line 1: expected topic:partition=offset"):
        stage(prod, editor, "latest")


def test_the_strategy_is_kept_shown_and_staged_again_the_same_way(prod, editor, sink):
    edit = stage(prod, editor, "shift", value=-2, partitions=(("orders", 1),))
    assert describe(edit)["store_strategy"] == "shifted by -2"
    assert sink_store.KIND.restage_change(edit) == StoreChange(
        StageRequest(strategy="shift", value=-2, partitions=(("orders", 1),))
    )
    # An edit staged before the strategies were kept set every partition to `value`.
    old = {"value": 4, "partitions": [["orders", 1]], "store": edit.parameters["store"]}
    assert store_request(old) == StageRequest(
        strategy="offset", value=4, partitions=(("orders", 1),)
    )
    assert store_strategy_words(old) == "to offset 4"


def test_a_value_alone_still_sets_every_partition_to_it(prod, editor, sink):
    edit = workflow.stage(
        cluster=prod,
        connector="files",
        user=editor,
        change=StoreChange(StageRequest("offset", value=3)),
    )
    assert targets(edit) == {("orders", 0): (5, 3), ("orders", 1): (8, 3)}
    assert edit.parameters["as"] == "offset"


# --- The API: POST /api/v1/edits/ with "strategy": "store-offset" ------------------------------


def post(client, editor, **fields):
    client.force_login(editor)
    body = {"cluster": "prod", "connector": "files", "strategy": "store-offset", **fields}
    return client.post("/api/v1/edits/", body, content_type="application/json")


def test_the_api_stages_the_store_with_a_sink_strategy(client, prod, editor, sink):
    response = post(client, editor, **{"as": "shift", "shift": -2})
    assert response.status_code == 201, response.content
    edit = OffsetEdit.objects.get(pk=response.json()["id"])
    assert targets(edit) == {("orders", 0): (5, 3), ("orders", 1): (8, 6)}
    assert (edit.parameters["as"], edit.parameters["value"]) == ("shift", -2)
    # A value alone is an offset, as before the strategies.
    response = post(client, editor, value=4, partitions=[{"topic": "orders", "partition": 1}])
    assert response.status_code == 201, response.content
    edit = OffsetEdit.objects.get(pk=response.json()["id"])
    assert (targets(edit), edit.parameters["as"]) == ({("orders", 1): (8, 4)}, "offset")
    response = post(client, editor, **{"as": "duration", "duration": "90m"})
    assert response.status_code == 201, response.content


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"as": "copy-group", "group": "g"}, "as"),
        ({"as": "shift"}, "shift"),
        ({"as": "offset"}, "value"),
        ({"as": "offset", "value": -1}, "value"),
        ({"as": "datetime"}, "at"),
        ({"as": "duration"}, "duration"),
        ({"as": "latest", "shift": 3}, "shift"),
        ({"as": "shift", "shift": 3, "value": 4}, "shift"),
        ({"strategy": "latest", "as": "latest"}, "as"),
    ],
)
def test_a_bad_store_input_is_a_400_naming_the_field(client, prod, editor, sink, fields, field):
    response = post(client, editor, **fields)
    assert response.status_code == 400
    assert field in response.json()
    assert not OffsetEdit.objects.exists()


def test_the_schema_documents_the_store_strategies(logged_in_client):
    schema = logged_in_client.get(
        "/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    ).json()
    schemas = schema["components"]["schemas"]
    fields = schemas["EditInput"]["properties"]
    enum = schemas[fields["as"]["allOf"][0]["$ref"].rsplit("/", 1)[1]]["enum"]
    assert set(enum) == {
        "earliest",
        "latest",
        "offset",
        "shift",
        "datetime",
        "duration",
    }
    assert "store-offset" in fields["as"]["description"]
    assert fields["shift"]["type"] == "integer"
