"""A record's key, value and headers as a page shows them: text or hex, capped, the Confluent
wire format named, secrets masked by the configs' rules; where a sink reads next."""

import json

import pytest

from offsets.domain.masking import MASK
from offsets.domain.record_preview import (
    HEX_CAP,
    TEXT_CAP,
    headers,
    next_position,
    preview,
    reset_policy,
)


def test_utf8_text_is_shown_as_text():
    shown = preview("héllo wörld".encode())
    assert (shown.kind, shown.text, shown.size, shown.cut) == ("text", "héllo wörld", 13, False)
    assert shown.schema_id is None


def test_null_and_empty_are_named_not_shown():
    assert (preview(None).kind, preview(None).text) == ("null", "")
    assert (preview(b"").kind, preview(b"").text) == ("empty", "")


def test_bytes_that_are_not_text_are_shown_as_hex():
    shown = preview(b"\xff\xfe\x01\x02")
    assert (shown.kind, shown.text, shown.cut) == ("hex", "ff fe 01 02", False)


def test_control_characters_make_it_hex_rather_than_text():
    assert preview(b"ab\x01cd").kind == "hex"
    assert preview(b"a\tb\nc").kind == "text"


def test_a_long_text_is_cut_at_the_cap_and_says_so():
    shown = preview(("word " * 1000).encode())
    assert shown.cut and len(shown.text) <= TEXT_CAP
    assert shown.size == 5000


def test_an_unbroken_long_text_is_cut_at_the_cap_too():
    shown = preview(b"x" * (TEXT_CAP + 10))
    assert shown.cut and shown.text == "x" * TEXT_CAP


def test_long_binary_is_cut_at_the_hex_cap():
    shown = preview(b"\xff" * (HEX_CAP + 1))
    assert shown.cut and shown.text == " ".join(["ff"] * HEX_CAP)
    assert shown.size == HEX_CAP + 1


def test_the_confluent_wire_format_is_named_with_its_schema_id():
    avro = b"\x00" + (1234567).to_bytes(4, "big") + b"\x02\x06abc\xff"
    shown = preview(avro)
    assert shown.schema_id == 1234567
    assert shown.kind == "hex" and shown.text == "02 06 61 62 63 ff"
    assert shown.size == len(avro)


def test_a_confluent_json_schema_payload_is_shown_as_text_after_the_header():
    shown = preview(b"\x00\x00\x00\x00\x07" + b'{"id": 1}')
    assert shown.schema_id == 7 and shown.kind == "json"
    assert json.loads(shown.text) == {"id": 1}


def test_json_fields_with_secret_names_are_masked_by_the_configs_rules():
    value = {"user": "ann", "password": "hunter2", "nested": [{"api_key": "k-1", "n": 3}]}
    shown = preview(json.dumps(value).encode())
    assert shown.kind == "json"
    assert json.loads(shown.text) == {
        "user": "ann",
        "password": MASK,
        "nested": [{"api_key": MASK, "n": 3}],
    }
    assert "hunter2" not in shown.text and "k-1" not in shown.text


def test_credentials_inside_text_are_masked():
    shown = preview(b"connect to postgres://app:s3cret@db:5432/shop now")
    assert "s3cret" not in shown.text and MASK in shown.text
    field = preview(json.dumps({"url": "jdbc:mysql://u:pw1@h/db"}).encode())
    assert "pw1" not in field.text


def test_headers_are_listed_in_order_and_a_secret_names_value_is_masked():
    shown = headers([("trace-id", b"abc"), ("Authorization", b"Bearer xyz"), ("bin", b"\xff")])
    assert [header.name for header in shown] == ["trace-id", "Authorization", "bin"]
    assert [header.value.text for header in shown] == ["abc", MASK, "ff"]
    assert headers(None) == [] and headers([("n", None)])[0].value.kind == "null"


@pytest.mark.parametrize(
    "hostile",
    ['<script>alert("x")</script>', "{{ 7*7 }} {% now %}", "'; DROP TABLE x; --", "../../etc"],
)
def test_hostile_strings_are_kept_as_data(hostile):
    # Shown as they are: the template escapes them (tests of the page check the HTML).
    assert preview(hostile.encode()).text == hostile


@pytest.mark.parametrize(
    ("config", "policy"),
    [
        ({}, "earliest"),
        ({"consumer.override.auto.offset.reset": "latest"}, "latest"),
        ({"consumer.override.auto.offset.reset": " NONE "}, "none"),
    ],
)
def test_the_reset_policy_is_connects_default_unless_the_connector_overrides_it(config, policy):
    assert reset_policy(config) == policy


def test_the_committed_offset_is_read_next_while_it_is_in_the_log():
    assert next_position(5, "earliest", 0, 10).offset == 5
    at_end = next_position(10, "earliest", 0, 10)
    assert at_end.offset is None and "Nothing to read yet" in at_end.note


def test_before_a_first_commit_the_reset_policy_says_where_it_starts():
    earliest = next_position(None, "earliest", 3, 10)
    assert earliest.offset == 3 and "Never committed" in earliest.note
    latest = next_position(None, "latest", 3, 10)
    assert latest.offset is None and "nothing to read yet" in latest.note
    none = next_position(None, "none", 3, 10)
    assert none.offset is None and "fails" in none.note


def test_a_committed_offset_deleted_by_retention_resumes_by_the_reset_policy():
    gone = next_position(1, "earliest", 3, 10)
    assert gone.offset == 3 and "before the log start 3" in gone.note


def test_a_record_of_megabytes_is_previewed_from_its_first_bytes_only():
    big = ('{"password": "hunter2", "rows": [' + ", ".join(['"é"'] * 1_000_000) + "]}").encode()
    shown = preview(big)
    assert shown.cut and shown.size == len(big) and len(shown.text) <= TEXT_CAP
    # Too long to parse whole: masked as text, the secret's label still found.
    assert shown.kind == "text" and "hunter2" not in shown.text and MASK in shown.text


def test_a_character_cut_at_the_window_is_left_out_not_an_error():
    # "aé " is 4 bytes: the window of TEXT_CAP * 4 bytes ends inside an "é" after one "a".
    shown = preview(("a" + "aé " * (TEXT_CAP * 3)).encode())
    assert shown.kind == "text" and shown.cut and shown.text.startswith("aaé aé ")
    assert len(shown.text) <= TEXT_CAP


def test_past_the_window_an_unbroken_run_is_not_shown_in_part():
    shown = preview(b"x" * (TEXT_CAP * 5))
    assert shown.cut and shown.text == ""


@pytest.mark.parametrize(
    ("ms", "text"), [(0, "1970-01-01T00:00:00.000 UTC"), (-1, ""), (2**62, "not a date")]
)
def test_a_records_timestamp_is_a_utc_date_when_it_is_one(ms, text):
    from offsets.queries.next_records import NextRecord

    row = NextRecord("t", 0, None, 0, 0, "STOP", timestamp_ms=ms)
    assert row.timestamp_text == text
