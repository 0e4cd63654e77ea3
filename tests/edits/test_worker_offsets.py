"""An edit as a KIP-875 request: which edits the worker can write as the topic holds them."""

import pytest

from offsets.domain.worker_offsets import (
    WorkerEntry,
    WorkerRequest,
    answer_entries,
    canonical,
    resets_everything,
    sink_request,
    source_request,
    worker_bytes,
    worker_mismatches,
)
from offsets.formats import jackson
from offsets.formats.java_hashmap import java_hashmap_order

CONNECTOR = "orders"


def key(partition: dict, connector: str = CONNECTOR) -> bytes:
    return jackson.dumps([connector, partition])


def test_a_key_in_the_workers_field_order_becomes_a_patch_entry():
    partition = {"filename": "/data/in.txt"}
    request = source_request(CONNECTOR, [(key(partition), {"position": 42})])
    assert request.possible
    assert [entry.as_json() for entry in request.entries] == [
        {"partition": partition, "offset": {"position": 42}}
    ]


def test_a_delete_is_a_null_offset():
    request = source_request(CONNECTOR, [(key({"file": "a"}), None)])
    assert request.entries == (WorkerEntry({"file": "a"}, None),)


def test_the_worker_writes_map_fields_in_java_hashmap_order():
    fields = ["table", "db", "shard", "region"]
    hashmap = java_hashmap_order(fields)
    assert hashmap != fields  # the test means something only if the orders differ
    written = worker_bytes(["c", {name: 1 for name in fields}])
    assert written == jackson.dumps(["c", {name: 1 for name in hashmap}])


def test_a_key_in_another_field_order_goes_to_the_topic_and_says_why():
    fields = ["table", "db", "shard", "region"]
    inserted = {name: "x" for name in fields}  # insertion order, not HashMap order
    request = source_request(CONNECTOR, [(key(inserted), {"pos": 1})])
    assert not request.possible
    assert "another order than the worker writes them" in request.refusal
    ordered = {name: "x" for name in java_hashmap_order(fields)}
    assert source_request(CONNECTOR, [(key(ordered), {"pos": 1})]).possible


def test_nested_values_and_wide_integers_are_refused_like_the_worker_refuses_them():
    nested = source_request(CONNECTOR, [(key({"f": "a"}), {"pos": {"inner": 1}})])
    assert "only primitive values" in nested.refusal and "'pos'" in nested.refusal
    in_key = source_request(CONNECTOR, [(key({"f": ["a"]}), {"pos": 1})])
    assert "only primitive values" in in_key.refusal
    wide = source_request(CONNECTOR, [(key({"f": "a"}), {"pos": 2**63})])
    assert "wider than a Java long" in wide.refusal
    assert source_request(CONNECTOR, [(key({"f": "a"}), {"pos": 2**63 - 1})]).possible


def test_keys_that_are_not_this_connectors_are_refused():
    assert "not JSON" in source_request(CONNECTOR, [(b"{nope", None)]).refusal
    shape = source_request(CONNECTOR, [(b'["orders"]', None)])
    assert "not [name, partition map]" in shape.refusal
    other = source_request(CONNECTOR, [(key({"f": "a"}, "billing"), None)])
    assert "names another connector" in other.refusal


def test_key_drift_cannot_go_through_the_worker():
    # The same logical partition under two byte forms: the worker writes only one of them.
    spaced = b'["orders",{"f": "a"}]'
    request = source_request(CONNECTOR, [(key({"f": "a"}), None), (spaced, None)])
    assert not request.possible
    request = source_request(CONNECTOR, [(key({"f": "a"}), {"p": 1}), (key({"f": "a"}), {"p": 1})])
    assert "several byte forms" in request.refusal


def test_a_refusal_quotes_three_partitions_and_counts_the_rest():
    changes = [(key({"f": str(n)}), {"p": {"deep": n}}) for n in range(5)]
    refusal = source_request(CONNECTOR, changes).refusal
    assert refusal.count("only primitive values") == 3 and "(and 2 more)" in refusal


def test_sink_entries_name_topic_and_partition():
    request = sink_request([("orders", 0, 5), ("orders", 1, None)])
    assert [entry.as_json() for entry in request.entries] == [
        {
            "partition": {"kafka_topic": "orders", "kafka_partition": 0},
            "offset": {"kafka_offset": 5},
        },
        {"partition": {"kafka_topic": "orders", "kafka_partition": 1}, "offset": None},
    ]


def test_deleting_exactly_what_the_worker_holds_is_a_reset():
    request = sink_request([("t", 0, None), ("t", 1, None)])
    held = [
        {"partition": {"kafka_partition": 1, "kafka_topic": "t"}, "offset": {"kafka_offset": 9}},
        {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 3}},
    ]
    assert resets_everything(request, held)
    # One more partition on the worker must keep its offset: a PATCH, not a DELETE.
    extra = {"partition": {"kafka_topic": "t", "kafka_partition": 2}, "offset": None}
    assert not resets_everything(request, [*held, extra])
    assert not resets_everything(sink_request([("t", 0, None), ("t", 1, 4)]), held)
    assert not resets_everything(WorkerRequest(), [])


def test_mismatches_compare_offsets_by_value_and_type_in_any_order():
    request = source_request(CONNECTOR, [(key({"f": "a"}), {"pos": 1, "gen": 2})])
    same = [{"partition": {"f": "a"}, "offset": {"gen": 2, "pos": 1}}]
    assert worker_mismatches(request, same) == []
    as_float = [{"partition": {"f": "a"}, "offset": {"gen": 2, "pos": 1.0}}]
    assert worker_mismatches(request, as_float)
    assert "the worker has null" in worker_mismatches(request, [])[0]
    deleted = source_request(CONNECTOR, [(key({"f": "a"}), None)])
    assert worker_mismatches(deleted, []) == []
    assert worker_mismatches(deleted, same)


def test_canonical_tells_numbers_from_strings_and_ints_from_floats():
    assert canonical({"b": 1, "a": 2}) == canonical({"a": 2, "b": 1})
    assert len({canonical(1), canonical(1.0), canonical("1")}) == 3


def test_an_offsets_answer_of_another_shape_is_refused_with_what_it_was():
    from offsets.domain.worker_offsets import answer_entries

    entry = {"partition": {"f": "a"}, "offset": None}
    assert answer_entries({"offsets": [entry]}) == [entry]
    for body in ([entry], {"offsets": {"f": 1}}, {"offsets": [1]}, None, "<html>"):
        try:
            answer_entries(body)
        except ValueError as exc:
            assert "GET .../offsets answered" in str(exc)
        else:
            raise AssertionError(f"{body!r} was accepted")


@pytest.mark.parametrize(
    "body",
    [
        {"offsets": "jdbc:postgresql://app:hunter2@db/shop"},
        {"offsets": ["password=hunter2"]},
    ],
)
def test_a_malformed_answer_is_quoted_masked(body):
    with pytest.raises(ValueError) as error:
        answer_entries(body)
    assert "hunter2" not in str(error.value) and "********" in str(error.value)
