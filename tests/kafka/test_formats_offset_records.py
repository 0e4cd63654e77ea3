from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsets.formats.offset_records import (
    MalformedReason,
    MalformedRecord,
    SourceOffsetRecord,
    latest_offsets,
    parse_offset_record,
    partition_identity,
    refresh_key_reason,
    timestamp_in_range,
)

quick = settings(database=None, deadline=None, max_examples=300)

KEY = b'["local-file-source",{"filename":"test.txt"}]'
VALUE = b'{"position":42}'


def test_it_parses_a_source_offset_keeping_the_exact_bytes() -> None:
    record = parse_offset_record(KEY, VALUE)
    assert record == SourceOffsetRecord(
        connector="local-file-source",
        partition={"filename": "test.txt"},
        offset={"position": 42},
        key_bytes=KEY,
        value_bytes=VALUE,
    )
    assert not record.is_tombstone


def test_it_parses_a_tombstone() -> None:
    record = parse_offset_record(KEY, None)
    assert isinstance(record, SourceOffsetRecord)
    assert record.is_tombstone
    assert record.offset is None
    assert record.partition == {"filename": "test.txt"}


def test_it_keeps_odd_but_valid_key_bytes_untouched() -> None:
    key = b'[ "c" , {"b":1, "a":"\\u00e9"} ]'
    record = parse_offset_record(key, VALUE)
    assert isinstance(record, SourceOffsetRecord)
    assert record.key_bytes == key
    assert list(record.partition) == ["b", "a"]
    assert record.partition["a"] == "é"


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        (None, VALUE, MalformedReason.KEY_NULL),
        (b'["c",{"f":"\xff"}]', VALUE, MalformedReason.KEY_NOT_UTF8),
        (b'["c",{"f":1}', VALUE, MalformedReason.KEY_NOT_JSON),
        (b"", VALUE, MalformedReason.KEY_NOT_JSON),
        (b'["c",{"f":NaN}]', VALUE, MalformedReason.KEY_NOT_JSON),
        (b'{"c":{"f":1}}', VALUE, MalformedReason.KEY_NOT_ARRAY),
        (b'["c",{"f":1},"extra"]', VALUE, MalformedReason.KEY_NOT_ARRAY),
        (b'["c"]', VALUE, MalformedReason.KEY_NOT_ARRAY),
        (b'[7,{"f":1}]', VALUE, MalformedReason.KEY_CONNECTOR_NOT_STRING),
        (b'["c",["f",1]]', VALUE, MalformedReason.KEY_PARTITION_NOT_OBJECT),
        (b'["c",null]', VALUE, MalformedReason.KEY_PARTITION_NOT_OBJECT),
        (b'["c",{"f":{"nested":1}}]', VALUE, MalformedReason.KEY_PARTITION_NOT_FLAT),
        (KEY, b'{"position":"\xc3"}', MalformedReason.VALUE_NOT_UTF8),
        (KEY, b'{"position":', MalformedReason.VALUE_NOT_JSON),
        (KEY, b"42", MalformedReason.VALUE_NOT_OBJECT),
        (KEY, b"null", MalformedReason.VALUE_NOT_OBJECT),
        (KEY, b'{"position":[1,2]}', MalformedReason.VALUE_NOT_FLAT),
    ],
)
def test_it_reports_each_malformed_record_with_its_reason(
    key: bytes | None, value: bytes | None, reason: MalformedReason
) -> None:
    record = parse_offset_record(key, value)
    assert isinstance(record, MalformedRecord)
    assert record.reason is reason
    assert record.detail
    assert record.key_bytes == key
    assert record.value_bytes == value


def test_every_malformed_reason_has_a_label() -> None:
    assert MalformedReason.KEY_NOT_ARRAY.label == "The key is not a JSON array of two elements."
    assert all(reason.label.endswith(".") for reason in MalformedReason)


@given(st.none() | st.binary(max_size=64), st.none() | st.binary(max_size=64))
@quick
def test_it_never_raises_on_arbitrary_bytes(key: bytes | None, value: bytes | None) -> None:
    assert isinstance(parse_offset_record(key, value), SourceOffsetRecord | MalformedRecord)


@given(
    st.text(alphabet='[]{}",:0123456789.eE+-truefalsnl \\u', max_size=40), st.binary(max_size=16)
)
@quick
def test_it_never_raises_on_json_like_text(key: str, value: bytes) -> None:
    assert isinstance(
        parse_offset_record(key.encode(), value), SourceOffsetRecord | MalformedRecord
    )


def test_it_gives_logically_equal_partitions_one_identity() -> None:
    assert partition_identity({"b": 1, "a": "x"}) == partition_identity({"a": "x", "b": 1})
    assert partition_identity({"a": "é"}) == '{"a":"é"}'


def test_it_keeps_value_types_apart_in_the_identity() -> None:
    identities = {partition_identity({"p": value}) for value in (1, 1.0, "1", True)}
    assert len(identities) == 4


def test_it_keeps_the_last_write_per_key() -> None:
    result = latest_offsets([(KEY, b'{"position":1}'), (KEY, b'{"position":2}')])
    assert list(result.offsets) == [KEY]
    assert result.offsets[KEY].offset == {"position": 2}
    assert result.malformed == Counter()
    assert result.drift == {}


def test_a_tombstone_removes_the_key() -> None:
    result = latest_offsets([(KEY, VALUE), (KEY, None)])
    assert result.offsets == {}


def test_a_write_after_a_tombstone_brings_the_key_back() -> None:
    result = latest_offsets([(KEY, VALUE), (KEY, None), (KEY, b'{"position":7}')])
    assert result.offsets[KEY].offset == {"position": 7}


def test_a_malformed_value_hides_the_earlier_offset() -> None:
    # The runtime stores the raw bytes per key, so the task can no longer read position 42.
    result = latest_offsets([(KEY, VALUE), (KEY, b"not json")])
    assert result.offsets == {}
    assert result.malformed == Counter({MalformedReason.VALUE_NOT_JSON: 1})


def test_it_counts_malformed_records_and_keeps_the_good_ones() -> None:
    result = latest_offsets([(None, VALUE), (b"garbage", VALUE), (b"garbage", None), (KEY, VALUE)])
    assert list(result.offsets) == [KEY]
    assert result.malformed == Counter(
        {MalformedReason.KEY_NULL: 1, MalformedReason.KEY_NOT_JSON: 2}
    )


def test_it_reports_two_byte_forms_of_one_partition_as_drift() -> None:
    java_key = b'["jdbc",{"table":"orders","db":"shop"}]'
    python_key = b'["jdbc", {"db": "shop", "table": "orders"}]'
    other_key = b'["jdbc",{"table":"users","db":"shop"}]'
    result = latest_offsets(
        [(java_key, b'{"id":10}'), (python_key, b'{"id":99}'), (other_key, b'{"id":1}')]
    )
    identity = '{"db":"shop","table":"orders"}'
    assert list(result.drift) == [("jdbc", identity)]
    assert [record.key_bytes for record in result.drift[("jdbc", identity)]] == [
        java_key,
        python_key,
    ]
    assert len(result.offsets) == 3


def test_a_tombstoned_form_is_no_longer_drift() -> None:
    java_key = b'["jdbc",{"table":"orders","db":"shop"}]'
    python_key = b'["jdbc", {"db": "shop", "table": "orders"}]'
    result = latest_offsets(
        [(java_key, b'{"id":10}'), (python_key, b'{"id":99}'), (python_key, None)]
    )
    assert result.drift == {}


def test_the_same_partition_of_two_connectors_is_not_drift() -> None:
    result = latest_offsets([(b'["a",{"f":"x"}]', b'{"p":1}'), (b'["b",{"f":"x"}]', b'{"p":1}')])
    assert result.drift == {}


@pytest.mark.parametrize(
    ("connector", "partition", "reason"),
    [
        ("orders", {"table": "t", "n": 1, "x": None}, None),
        ("é/../\x01" + "c" * 240, {"😀": "\U0001f600"}, None),  # odd, but storable
        ("c" * 250, {}, MalformedReason.KEY_CONNECTOR_UNSTORABLE),
        ("a\x00b", {}, MalformedReason.KEY_CONNECTOR_UNSTORABLE),
        ("a\ud800", {}, MalformedReason.KEY_CONNECTOR_UNSTORABLE),
        ("c", {"t": "\udc00"}, MalformedReason.KEY_PARTITION_UNSTORABLE),
        ("c", {"t\x00": 1}, MalformedReason.KEY_PARTITION_UNSTORABLE),
        ("c", {"\udfff": 1}, MalformedReason.KEY_PARTITION_UNSTORABLE),
    ],
)
def test_a_key_the_database_cannot_store_is_one_the_refresh_skips(connector, partition, reason):
    found = refresh_key_reason(connector, partition)
    assert (found and found.reason) == reason


@pytest.mark.parametrize(
    ("timestamp_ms", "kept"),
    [
        (0, True),
        (-1, True),  # Kafka's "no timestamp": 1969
        (1_790_000_000_000, True),
        (253_402_214_399_999, True),  # 9999-12-30, the last day kept
        (253_402_300_800_000, False),  # 10000-01-01
        (2**63 - 1, False),
        (-(2**63), False),
        (-62_135_596_800_000, False),  # 0001-01-01, too close to the first date
    ],
)
def test_the_refresh_keeps_records_dated_within_the_years_python_holds(timestamp_ms, kept):
    assert timestamp_in_range(timestamp_ms) is kept
