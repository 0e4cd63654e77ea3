"""Property-based tests of the pure parsers: whatever the input, a result or a named error.

Each parser reads bytes someone else wrote (Connect's topics, an uploaded document, a form
field). The properties: it never raises anything but its own error type; good records keep
their meaning next to garbage; errors name where the input went wrong.
"""

import string
from datetime import timedelta

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from offsets.domain.edits import (
    EditRuleError,
    PartitionLog,
    parse_duration,
    sink_target,
)
from offsets.formats import jackson
from offsets.formats.config_records import (
    ConfigMalformedReason,
    fold_config_records,
)
from offsets.formats.offset_records import (
    MalformedReason,
    MalformedRecord,
    SourceOffsetRecord,
    latest_offsets,
    parse_offset_record,
)
from offsets.formats.offsets_json import (
    OffsetsDocumentError,
    flat_map_problem,
    load_document,
    parse_kip199,
    parse_kip875,
)
from offsets.formats.status_records import StatusMalformedReason, fold_status_records

# No example database: it would write a .hypothesis directory into the project.
quick = settings(database=None, deadline=None, max_examples=200)

JAVA_LONG = st.integers(min_value=-(2**63), max_value=2**63 - 1)
primitives = (
    st.none()
    | st.booleans()
    | JAVA_LONG
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    primitives,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=16,
)
flat_maps = st.dictionaries(st.text(max_size=8), primitives, min_size=1, max_size=4)
# Text that looks like JSON often enough to reach the deeper branches of a parser.
json_like_text = st.text(alphabet='[]{}",:0123456789.eE+-truefalsnNaIiy \\u', max_size=60)
any_bytes = st.binary(max_size=80) | json_like_text.map(str.encode)


# --- jackson ----------------------------------------------------------------------------------


@given(any_bytes)
@quick
def test_loads_gives_a_value_or_a_parse_error_with_a_position(data: bytes) -> None:
    try:
        jackson.loads(data)
    except jackson.JsonParseError as exc:
        assert exc.line >= 1 and exc.column >= 1 and exc.message


@given(json_values)
@quick
def test_dumps_then_loads_gives_the_value_back(value: object) -> None:
    assert jackson.loads(jackson.dumps(value)) == value


@given(st.text(max_size=20), flat_maps)
@quick
def test_a_key_written_by_dumps_key_parses_as_that_connector_and_partition(
    connector: str, partition: dict
) -> None:
    key = jackson.dumps_key(connector, partition)
    record = parse_offset_record(key, None)
    assert isinstance(record, SourceOffsetRecord)
    assert (record.connector, record.partition, record.key_bytes) == (connector, partition, key)
    assert record.is_tombstone


@given(json_values.filter(lambda v: not isinstance(v, str)), json_values)
@quick
def test_dumps_key_refuses_what_is_not_a_connector_and_a_partition(
    connector: object, partition: object
) -> None:
    with pytest.raises(TypeError):
        jackson.dumps_key(connector, partition if not isinstance(partition, dict) else [])


@pytest.mark.parametrize("text", [b"1e400", b"-1e400", b'{"a":[1,2e999]}'])
def test_loads_refuses_decimals_beyond_a_double(text: bytes) -> None:
    with pytest.raises(jackson.JsonParseError, match="out of a double's range"):
        jackson.loads(text)


# --- offsets records --------------------------------------------------------------------------


@given(st.none() | any_bytes, st.none() | any_bytes)
@quick
def test_parse_offset_record_classifies_any_bytes(key: bytes | None, value: bytes | None) -> None:
    record = parse_offset_record(key, value)
    if isinstance(record, MalformedRecord):
        assert record.reason in MalformedReason and record.detail
        assert (record.key_bytes, record.value_bytes) == (key, value)
    else:
        assert isinstance(record, SourceOffsetRecord)
        assert isinstance(record.connector, str) and isinstance(record.partition, dict)
        assert (record.offset is None) == (value is None)


@given(json_values.filter(lambda v: not (isinstance(v, list) and len(v) == 2)))
@quick
def test_a_key_that_is_not_a_pair_is_key_not_array(decoded: object) -> None:
    record = parse_offset_record(jackson.dumps(decoded), b"{}")
    assert isinstance(record, MalformedRecord)
    assert record.reason == MalformedReason.KEY_NOT_ARRAY


@given(json_values.filter(lambda v: not isinstance(v, dict)).map(jackson.dumps))
@quick
def test_a_value_that_is_not_an_object_is_value_not_object(value: bytes) -> None:
    record = parse_offset_record(b'["c",{"p":1}]', value)
    assert isinstance(record, MalformedRecord)
    assert record.reason == MalformedReason.VALUE_NOT_OBJECT


good_offset_records = st.tuples(
    st.sampled_from(["a", "b"]),
    st.dictionaries(st.sampled_from("xyz"), st.integers(0, 3), min_size=1, max_size=2),
    st.none() | flat_maps,
).map(lambda r: (jackson.dumps_key(r[0], r[1]), None if r[2] is None else jackson.dumps(r[2])))
# Garbage whose key can never equal a good key's bytes (it is not a valid key at all).
garbage_offset_records = st.tuples(
    st.none()
    | any_bytes.filter(lambda k: isinstance(parse_offset_record(k, None), MalformedRecord)),
    st.none() | any_bytes,
)


@given(st.lists(st.tuples(st.booleans(), good_offset_records, garbage_offset_records), max_size=20))
@quick
def test_garbage_keys_next_to_good_records_change_nothing_but_the_counts(rows: list) -> None:
    good = [record for _, record, _ in rows]
    mixed = []
    for garbage_first, record, garbage in rows:
        mixed += [garbage, record] if garbage_first else [record, garbage]
    alone, together = latest_offsets(good), latest_offsets(mixed)
    assert together.offsets == alone.offsets
    assert together.drift == alone.drift
    assert sum(together.malformed.values()) == len(rows)


# --- config and status topics -----------------------------------------------------------------

config_prefixes = st.sampled_from(
    ["connector-", "task-", "commit-", "target-state-", "restart-connector-", "tasks-fencing-"]
)
config_keys = (
    st.none()
    | st.just(b"session-key")
    | st.tuples(config_prefixes, st.text(max_size=10)).map(lambda t: (t[0] + t[1]).encode())
    | st.binary(max_size=20)
)
record_values = st.none() | any_bytes | json_values.map(jackson.dumps)


@given(st.lists(st.tuples(config_keys, record_values), max_size=15))
@quick
def test_the_config_fold_accounts_for_every_record_without_raising(records: list) -> None:
    snapshot = fold_config_records(records)
    for record in snapshot.malformed:
        assert record.reason in ConfigMalformedReason and record.detail
    assert len(snapshot.malformed) <= len(records)


def _not_json_object(value: bytes) -> bool:
    try:
        decoded = jackson.loads(value)
    except jackson.JsonParseError:
        return True
    return decoded is not None and not isinstance(decoded, dict)


good_configs = st.lists(
    st.sampled_from(
        [
            (b"connector-a", b'{"properties":{"connector.class":"A","topics":"t"}}'),
            (b"connector-b", b'{"properties":{"connector.class":"B"}}'),
            (b"task-a-0", b'{"properties":{"task.class":"T"}}'),
            (b"commit-a", b'{"tasks":1}'),
            (b"target-state-a", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
            (b"target-state-b", b'{"state":"PAUSED"}'),
            (b"connector-b", None),
        ]
    ),
    max_size=10,
)
# Any key (a good connector's included) with a value the runtime cannot convert or use.
bad_values = any_bytes.filter(_not_json_object)


@given(
    good_configs,
    st.lists(st.tuples(st.integers(0, 10), config_keys.filter(bool), bad_values), max_size=8),
)
@quick
def test_bad_config_values_next_to_good_records_change_no_connector(good: list, bad: list) -> None:
    mixed = list(good)
    for position, key, value in sorted(bad, key=lambda b: -b[0]):
        mixed.insert(min(position, len(mixed)), (key, value))
    assert fold_config_records(mixed).connectors == fold_config_records(good).connectors
    assert len(fold_config_records(mixed).malformed) == len(bad)


status_keys = (
    st.none()
    | st.tuples(
        st.sampled_from(["status-connector-", "status-task-", "status-topic-"]),
        st.text(max_size=12),
    ).map(lambda t: (t[0] + t[1]).encode())
    | st.binary(max_size=20)
)
good_statuses = st.lists(
    st.sampled_from(
        [
            (
                b"status-connector-a",
                b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1}',
            ),
            (b"status-task-a-0", b'{"state":"FAILED","trace":"x","worker_id":"w","generation":2}'),
            (
                b"status-connector-b",
                b'{"state":"PAUSED","trace":null,"worker_id":"w","generation":1}',
            ),
            (b"status-connector-b", None),
        ]
    ),
    max_size=8,
)


@given(good_statuses, st.lists(st.tuples(st.integers(0, 8), status_keys, bad_values), max_size=8))
@quick
def test_bad_status_values_next_to_good_records_change_no_status(good: list, bad: list) -> None:
    mixed = list(good)
    for position, key, value in sorted(bad, key=lambda b: -b[0]):
        mixed.insert(min(position, len(mixed)), (key, value))
    folded = fold_status_records(mixed)
    assert folded.connectors == fold_status_records(good).connectors
    assert len(folded.malformed) == len(bad)
    assert all(record.reason in StatusMalformedReason for record in folded.malformed)


# --- offsets documents (KIP-875 / KIP-199) ----------------------------------------------------

documents = (
    json_values
    | st.fixed_dictionaries(
        {
            "offsets": st.lists(
                st.dictionaries(st.sampled_from(["partition", "offset", "x"]), json_values)
            )
        }
    )
    | st.dictionaries(
        st.text(max_size=6),
        st.lists(
            st.fixed_dictionaries({"partition": json_values, "offset": json_values})
            | st.fixed_dictionaries(
                {
                    "partition": st.fixed_dictionaries(
                        {"kafka_topic": json_values, "kafka_partition": json_values}
                    ),
                    "offset": st.none() | st.fixed_dictionaries({"kafka_offset": json_values}),
                }
            ),
            max_size=3,
        ),
        max_size=3,
    )
)


def _assert_named(exc: OffsetsDocumentError, roots: set[str]) -> None:
    assert exc.message
    assert exc.field == "document" or any(exc.field.startswith(root) for root in roots), exc.field


@given(documents, st.sampled_from([None, "source", "sink"]))
@quick
def test_a_kip875_document_parses_or_names_the_field_at_fault(doc: object, kind) -> None:
    try:
        entries = parse_kip875(doc, connector_type=kind)
    except OffsetsDocumentError as exc:
        _assert_named(exc, {"offsets", "["} | (set(doc) if isinstance(doc, dict) else set()))
    else:
        assert all(isinstance(entry.partition, dict) and entry.partition for entry in entries)


@given(documents, st.sampled_from(["source", "sink"]))
@quick
def test_a_kip199_document_parses_or_names_the_field_at_fault(doc: object, kind: str) -> None:
    types = {name: kind for name in doc} if isinstance(doc, dict) else {}
    try:
        parsed = parse_kip199(doc, connector_types=types)
    except OffsetsDocumentError as exc:
        # A connector name that is not a plain word is quoted: ["a b"][0].partition.
        roots = {str(name) for name in types} | {"["}
        _assert_named(exc, roots)
    else:
        assert set(parsed) == set(doc)


@given(any_bytes | json_values.map(jackson.dumps))
@quick
def test_an_upload_loads_or_names_the_line_and_column(data: bytes) -> None:
    try:
        load_document(data)
    except OffsetsDocumentError as exc:
        assert exc.field == "document" and "line" in exc.message


@given(
    st.dictionaries(
        st.text(max_size=6),
        primitives
        | st.integers()
        | st.floats()
        | st.text(alphabet=st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=3)
        | st.lists(primitives, max_size=2),
        max_size=4,
    )
)
@quick
def test_flat_map_problem_names_a_field_or_the_map_writes_as_connect_json(mapping: dict) -> None:
    problem = flat_map_problem(mapping)
    if problem is None:
        assert jackson.loads(jackson.dumps(mapping)) == mapping
    else:
        name, message = problem
        assert name in mapping and message


@pytest.mark.parametrize(
    ("mapping", "fragment"),
    [
        ({"p": 2**63}, "Java long"),
        ({"p": -(2**63) - 1}, "Java long"),
        ({"p": float("inf")}, "finite"),
        ({"p": "\ud800"}, "Unicode"),
        ({"\udfff": 1}, "Unicode"),
        ({"p": [1]}, "string, number"),
        # PostgreSQL's text and JSON columns cannot hold U+0000 (found by the API fuzz test).
        ({"file": "a\x00b"}, "NUL"),
        ({"fi\x00le": 1}, "NUL"),
    ],
)
def test_flat_map_problem_refuses_what_a_task_would_read_differently(mapping, fragment) -> None:
    assert fragment in flat_map_problem(mapping)[1]


# --- edit rules: the user-typed parts ---------------------------------------------------------

duration_text = (
    st.text(max_size=20)
    | st.from_regex(r"\AP(\d{1,12}W)?(\d{1,12}D)?(T(\d{1,12}H)?(\d{1,12}M)?(\d{1,12}S)?)?\Z")
    | st.tuples(st.integers(0, 10**15), st.sampled_from("smhdw")).map(lambda t: f"{t[0]}{t[1]}")
)


@given(duration_text)
@quick
def test_parse_duration_gives_a_bounded_duration_or_a_value_error(text: str) -> None:
    try:
        duration = parse_duration(text)
    except ValueError as exc:
        assert str(exc)
    else:
        assert timedelta(0) <= duration <= timedelta(days=36_600)


@pytest.mark.parametrize("text", ["99999999999d", "P9999999999W", "PT99999999999999H", "1000000w"])
def test_parse_duration_refuses_absurd_lengths(text: str) -> None:
    with pytest.raises(ValueError, match="too long"):
        parse_duration(text)


@given(
    st.sampled_from(["earliest", "latest", "offset", "shift", "datetime", "duration", "copy-group"])
    | st.text(alphabet=string.ascii_lowercase, max_size=8),
    st.integers(0, 2**63 - 1),
    st.integers(0, 2**63 - 1),
    st.none() | st.integers(-(2**64), 2**64),
    st.none() | st.integers(-(2**64), 2**64),
)
@quick
def test_a_sink_target_stays_inside_the_log(strategy, a, b, committed, value) -> None:
    log = PartitionLog("t", 0, min(a, b), max(a, b))
    assume(committed is None or committed >= 0)
    try:
        target = sink_target(
            strategy, log=log, committed=committed, value=value, copied=value, time_offset=value
        )
    except EditRuleError as exc:
        assert str(exc)
    else:
        assert target.offset is None or log.log_start <= target.offset <= log.log_end


@pytest.mark.parametrize("name", ["a\x00b", "\ud800"])
def test_a_kip199_document_refuses_a_connector_name_postgresql_cannot_look_up(name) -> None:
    with pytest.raises(OffsetsDocumentError, match="NUL"):
        parse_kip199({name: []})
