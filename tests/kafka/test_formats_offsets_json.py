import pytest

from offsets.formats.jackson import dumps
from offsets.formats.offsets_json import (
    OffsetsDocumentError,
    PartitionOffset,
    load_document,
    parse_kip199,
    parse_kip875,
    to_kip199,
    to_kip875,
)

SOURCE_ENTRIES = [
    PartitionOffset({"filename": "a.txt"}, {"position": 42}),
    PartitionOffset({"filename": "b.txt", "shard": 2}, {"position": 7, "eof": True, "ratio": 0.5}),
    PartitionOffset({"filename": "gone.txt"}, None),
]
SINK_ENTRIES = [
    PartitionOffset({"kafka_topic": "orders", "kafka_partition": 0}, {"kafka_offset": 5}),
    PartitionOffset({"kafka_topic": "orders", "kafka_partition": 1}, None),
]


def test_it_builds_the_kip875_shape() -> None:
    assert to_kip875(SINK_ENTRIES) == {
        "offsets": [
            {
                "partition": {"kafka_topic": "orders", "kafka_partition": 0},
                "offset": {"kafka_offset": 5},
            },
            {"partition": {"kafka_topic": "orders", "kafka_partition": 1}, "offset": None},
        ]
    }


def test_a_source_document_round_trips_through_its_bytes() -> None:
    data = dumps(to_kip875(SOURCE_ENTRIES))
    assert parse_kip875(load_document(data)) == SOURCE_ENTRIES


def test_a_sink_document_round_trips_through_its_bytes() -> None:
    data = dumps(to_kip875(SINK_ENTRIES))
    assert data.startswith(b'{"offsets":[{"partition":{"kafka_topic":"orders","kafka_partition":0}')
    assert parse_kip875(load_document(data), connector_type="sink") == SINK_ENTRIES


def test_a_kip199_document_round_trips_through_its_text() -> None:
    mapping = {"file-source": SOURCE_ENTRIES, "orders-sink": SINK_ENTRIES}
    text = dumps(to_kip199(mapping)).decode()
    assert text.startswith(
        '{"file-source":[{"partition":{"filename":"a.txt"},"offset":{"position":42}}'
    )
    parsed = parse_kip199(load_document(text), connector_types={"orders-sink": "sink"})
    assert parsed == mapping


def test_an_empty_document_means_no_changes() -> None:
    assert parse_kip875({"offsets": []}) == []
    assert parse_kip199({}) == {}


def rejection(doc: object, **kwargs: object) -> OffsetsDocumentError:
    with pytest.raises(OffsetsDocumentError) as caught:
        parse_kip875(doc, **kwargs)  # type: ignore[arg-type]
    return caught.value


def sink_doc(partition: object, offset: object = None) -> dict[str, object]:
    return {"offsets": [{"partition": partition, "offset": offset}]}


GOOD = {"partition": {"f": "a"}, "offset": {"p": 1}}


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ([], "document"),
        ({}, "offsets"),
        ({"offsets": [], "extra": 1}, "extra"),
        ({"offsets": {}}, "offsets"),
        ({"offsets": [GOOD, "entry"]}, "offsets[1]"),
        ({"offsets": [{"partition": {"f": "a"}}]}, "offsets[0].offset"),
        ({"offsets": [{"offset": None}]}, "offsets[0].partition"),
        ({"offsets": [{**GOOD, "note": "x"}]}, "offsets[0].note"),
        ({"offsets": [{"partition": ["f"], "offset": None}]}, "offsets[0].partition"),
        ({"offsets": [{"partition": {}, "offset": None}]}, "offsets[0].partition"),
        (
            {"offsets": [GOOD, GOOD, {"partition": {"f": "a", "g": [1]}, "offset": None}]},
            "offsets[1].partition",
        ),
        (
            {"offsets": [GOOD, {"partition": {"f": "a", "g": [1]}, "offset": None}]},
            "offsets[1].partition.g",
        ),
        ({"offsets": [{"partition": {"f": "a"}, "offset": 5}]}, "offsets[0].offset"),
        (
            {"offsets": [{"partition": {"f": "a"}, "offset": {"p": {"q": 1}}}]},
            "offsets[0].offset.p",
        ),
        (
            {"offsets": [{"partition": {"file.name": {}}, "offset": None}]},
            'offsets[0].partition["file.name"]',
        ),
    ],
)
def test_it_names_the_field_of_a_bad_kip875_document(doc: object, field: str) -> None:
    assert rejection(doc).field == field


def test_it_rejects_the_same_partition_twice_in_any_field_order() -> None:
    doc = {
        "offsets": [
            {"partition": {"db": "shop", "table": "orders"}, "offset": {"id": 1}},
            {"partition": {"table": "orders", "db": "shop"}, "offset": None},
        ]
    }
    error = rejection(doc)
    assert error.field == "offsets[1].partition"
    assert str(error) == "offsets[1].partition: duplicates offsets[0].partition"


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (sink_doc({"kafka_topic": "orders"}), "offsets[0].partition.kafka_partition"),
        (sink_doc({"kafka_partition": 0}), "offsets[0].partition.kafka_topic"),
        (sink_doc({"kafka_topic": "", "kafka_partition": 0}), "offsets[0].partition.kafka_topic"),
        (sink_doc({"kafka_topic": 7, "kafka_partition": 0}), "offsets[0].partition.kafka_topic"),
        (
            sink_doc({"kafka_topic": "t", "kafka_partition": -1}),
            "offsets[0].partition.kafka_partition",
        ),
        (
            sink_doc({"kafka_topic": "t", "kafka_partition": "2"}),
            "offsets[0].partition.kafka_partition",
        ),
        (
            sink_doc({"kafka_topic": "t", "kafka_partition": True}),
            "offsets[0].partition.kafka_partition",
        ),
        (
            sink_doc({"kafka_topic": "t", "kafka_partition": 1.0}),
            "offsets[0].partition.kafka_partition",
        ),
        (sink_doc({"kafka_topic": "t", "kafka_partition": 0, "x": 1}), "offsets[0].partition.x"),
        (
            sink_doc({"kafka_topic": "t", "kafka_partition": 0}, {}),
            "offsets[0].offset.kafka_offset",
        ),
        (
            sink_doc({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": -5}),
            "offsets[0].offset.kafka_offset",
        ),
        (
            sink_doc({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": 5, "meta": "x"}),
            "offsets[0].offset.meta",
        ),
    ],
)
def test_it_names_the_field_of_a_bad_sink_entry(doc: object, field: str) -> None:
    assert rejection(doc, connector_type="sink").field == field


def test_the_sink_rules_do_not_apply_to_a_source() -> None:
    doc = sink_doc({"kafka_topic": "t"}, {"anything": "goes"})
    assert parse_kip875(doc, connector_type="source") == [
        PartitionOffset({"kafka_topic": "t"}, {"anything": "goes"})
    ]


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (["orders-sink"], "document"),
        ({"": []}, "document"),
        ({"orders-sink": {}}, "orders-sink"),
        (
            {
                "orders-sink": [
                    {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {}}
                ]
            },
            "orders-sink[0].offset.kafka_offset",
        ),
        (
            {"file-source": [GOOD], "orders-sink": [{"partition": {"f": "x"}}]},
            "orders-sink[0].offset",
        ),
    ],
)
def test_it_names_the_field_of_a_bad_kip199_document(doc: object, field: str) -> None:
    with pytest.raises(OffsetsDocumentError) as caught:
        parse_kip199(doc, connector_types={"orders-sink": "sink"})
    assert caught.value.field == field


def test_an_error_reads_as_field_then_message() -> None:
    error = rejection({"offsets": [{"partition": {"f": "a"}}]})
    assert error.message == "is required"
    assert str(error) == "offsets[0].offset: is required"


def test_it_names_the_line_and_column_of_bad_json() -> None:
    with pytest.raises(OffsetsDocumentError) as caught:
        load_document('{"offsets": [\n  {"partition": {"f": "a"}, "offset": nul}\n]}')
    assert caught.value.field == "document"
    assert caught.value.message.startswith("invalid JSON at line 2, column 39:")


def test_it_names_the_line_and_column_of_bad_utf8() -> None:
    with pytest.raises(OffsetsDocumentError) as caught:
        load_document(b'{"offsets": [\n\n  {"partition": {"f": "\xe9"}}]}')
    assert caught.value.message.startswith("invalid JSON at line 3, column 24: invalid UTF-8")
