import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsets.formats.jackson import (
    JsonParseError,
    dumps,
    dumps_key,
    dumps_text,
    escape_lone_surrogates,
    java_double_to_string,
    loads,
    replace_lone_surrogates,
)

# No example database: it would write a .hypothesis directory into the project.
quick = settings(database=None, deadline=None, max_examples=300)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0e7, "1.0E7"),
        (9999999.0, "9999999.0"),
        (0.001, "0.001"),
        (1.0e-4, "1.0E-4"),
        (100.0, "100.0"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0e21, "1.0E21"),
        (123456.789, "123456.789"),
        (12345678.9, "1.23456789E7"),
        (-1.5, "-1.5"),
        (1.234e-5, "1.234E-5"),
        # Double.MIN_VALUE: one digit would do ("5.0E-324") but Java weighs two digits too.
        (5e-324, "4.9E-324"),
        (1e-323, "9.9E-324"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (0.1 + 0.2, "0.30000000000000004"),
        # JDK 17 prints 9.999999999999999E22 here (JDK-4511638); JDK 19+ prints the shortest.
        (1.0e23, "1.0E23"),
        (float(2**63), "9.223372036854776E18"),
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
    ],
)
def test_it_writes_doubles_like_java(value: float, expected: str) -> None:
    assert java_double_to_string(value) == expected


@given(st.floats(allow_nan=False, allow_infinity=False))
@quick
def test_it_writes_doubles_that_read_back_with_the_fewest_digits(value: float) -> None:
    text = java_double_to_string(value)
    assert float(text) == value
    digits = text.lstrip("-").split("E")[0].replace(".", "").strip("0")
    repr_digits = repr(abs(value)).split("e")[0].replace(".", "").strip("0")
    # Python's repr is also shortest-round-trip; Java differs only where one digit suffices.
    if len(repr_digits) >= 2:
        assert digits == repr_digits


def test_it_writes_doubles_into_json_as_numbers() -> None:
    assert dumps({"position": 1.0e7, "ratio": 0.5}) == b'{"position":1.0E7,"ratio":0.5}'


def test_it_quotes_nan_and_infinities_like_jackson() -> None:
    assert dumps([math.nan, math.inf, -math.inf]) == b'["NaN","Infinity","-Infinity"]'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('say "hi"', rb'"say \"hi\""'),
        ("back\\slash", rb'"back\\slash"'),
        ("line\nbreak", rb'"line\nbreak"'),
        ("tab\there", rb'"tab\there"'),
        ("\b\f\r", rb'"\b\f\r"'),
        ("\x01", rb'"\u0001"'),
        ("\x1f", rb'"\u001F"'),
        ("\x00", rb'"\u0000"'),
        ("a/b", b'"a/b"'),
        ("\x7f", b'"\x7f"'),
        ("é", '"é"'.encode()),
        ("€", '"€"'.encode()),
    ],
)
def test_it_escapes_strings_like_jackson(text: str, expected: bytes) -> None:
    assert dumps(text) == expected


def test_it_escapes_an_emoji_as_a_surrogate_pair_like_jackson_2() -> None:
    # UTF8JsonGenerator._outputMultiByteChar escapes each surrogate char; raw 4-byte UTF-8
    # needs COMBINE_UNICODE_SURROGATES_IN_UTF8, which is off in Jackson 2.x.
    assert dumps("ok 😀") == rb'"ok \uD83D\uDE00"'


def test_it_escapes_a_lone_surrogate_like_jackson() -> None:
    assert dumps("\ud800x") == rb'"\uD800x"'


def test_it_escapes_object_keys_too() -> None:
    assert dumps({"na\tme": "é"}) == '{"na\\tme":"é"}'.encode()


def test_it_writes_compact_objects_in_insertion_order() -> None:
    value = {"z": 1, "a": [True, False, None], "m": {"n": "x"}}
    assert dumps(value) == b'{"z":1,"a":[true,false,null],"m":{"n":"x"}}'


def test_it_writes_booleans_as_booleans_not_integers() -> None:
    assert dumps({"flag": True, "count": 1, "zero": 0}) == b'{"flag":true,"count":1,"zero":0}'


def test_it_writes_tuples_as_arrays() -> None:
    assert dumps(("a", 1)) == b'["a",1]'


def test_it_writes_an_offsets_topic_key() -> None:
    key = dumps_key("local-file-source", {"filename": "test.txt"})
    assert key == b'["local-file-source",{"filename":"test.txt"}]'


def test_it_refuses_a_key_without_a_partition_map() -> None:
    with pytest.raises(TypeError, match="partition must be dict"):
        dumps_key("c", ["not", "a", "map"])  # type: ignore[arg-type]


def test_it_refuses_types_json_cannot_hold() -> None:
    with pytest.raises(TypeError, match="bytes"):
        dumps({"raw": b"\x00"})


def test_it_refuses_non_string_keys() -> None:
    with pytest.raises(TypeError, match="int"):
        dumps({1: "one"})


def test_it_refuses_integers_a_java_long_cannot_hold() -> None:
    assert dumps(2**63 - 1) == b"9223372036854775807"
    assert dumps(-(2**63)) == b"-9223372036854775808"
    with pytest.raises(ValueError, match="Java long"):
        dumps(2**63)


def test_it_reads_json_keeping_key_order_and_big_integers() -> None:
    value = loads(b'{"z":1,"a":12345678901234567890,"f":1.5E7}')
    assert list(value) == ["z", "a", "f"]  # type: ignore[arg-type]
    assert value == {"z": 1, "a": 12345678901234567890, "f": 15000000.0}


def test_it_keeps_the_last_value_of_a_duplicate_key_in_its_first_place() -> None:
    assert list(loads(b'{"a":1,"b":2,"a":3}').items()) == [("a", 3), ("b", 2)]  # type: ignore[union-attr]


@pytest.mark.parametrize("literal", [b"NaN", b"[Infinity]", b'{"x":-Infinity}'])
def test_it_rejects_non_numeric_literals_like_jackson(literal: bytes) -> None:
    with pytest.raises(JsonParseError):
        loads(literal)


def test_it_names_the_line_and_column_of_bad_json() -> None:
    with pytest.raises(JsonParseError) as caught:
        loads(b'{\n  "a": 1,\n  "b": }')
    assert (caught.value.line, caught.value.column) == (3, 8)


def test_it_names_the_line_and_column_of_bad_utf8() -> None:
    with pytest.raises(JsonParseError) as caught:
        loads(b'{"a":\n "x\xff"}')
    assert (caught.value.line, caught.value.column) == (2, 4)
    assert "UTF-8" in caught.value.message


def test_it_rejects_trailing_content() -> None:
    with pytest.raises(JsonParseError):
        loads(b'["c",{}] trailing')


def test_it_rejects_deep_nesting_with_a_parse_error() -> None:
    with pytest.raises(JsonParseError, match="nested too deeply"):
        loads(b"[" * 100_000)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
@quick
def test_it_reads_back_what_it_writes(value: object) -> None:
    assert loads(dumps(value)) == value


def test_text_for_people_keeps_unicode_raw_and_escapes_lone_surrogates():
    value = {"file": "a\ud800b", "\udfff": ["é", "\U0001f600", "\udc00\ud800"]}
    text = dumps_text(value)
    assert text == '{"file":"a\\ud800b","\\udfff":["é","\U0001f600","\\udc00\\ud800"]}'
    text.encode("utf-8")  # no lone surrogate left
    assert loads(text) == value
    # What Jackson wrote reads back to the same value.
    assert loads(dumps(value)) == value


def test_indented_text_is_json_dumps_indented_when_there_is_no_surrogate():
    value = {"offsets": [{"partition": {"t": "é"}, "offset": None}]}
    assert dumps_text(value, indent=2) == json.dumps(value, indent=2, ensure_ascii=False)
    assert escape_lone_surrogates('{"a":"b"}') == '{"a":"b"}'


@quick
@given(st.recursive(st.text(), lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)))
def test_any_string_a_java_string_may_hold_is_written_and_read_back(value):
    text = dumps_text(value)
    text.encode("utf-8")
    assert loads(text) == value


def test_lone_surrogates_are_replaced_in_every_string_and_key():
    value = {"a\ud800": ["x\udc00", 1, None, {"k": "\U0001f600"}], "b": True}
    assert replace_lone_surrogates(value) == {
        "a\ufffd": ["x\ufffd", 1, None, {"k": "\U0001f600"}],
        "b": True,
    }
