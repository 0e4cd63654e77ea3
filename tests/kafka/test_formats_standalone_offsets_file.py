"""The standalone worker's offsets file, against files the real runtime wrote.

tests/support/fixtures/standalone/*.offsets were written by Kafka 4.3.1's ConnectStandalone (the jars
in var/kafka-runtime/libs/worker) with JsonConverter keys and values (schemas off),
`offset.storage.file.filename` set and FileStreamSource connectors reading small files under
/tmp/sa-vec: one-source.offsets after `file-source` read 34 bytes; two-sources-one-reset.offsets
after a second connector, `file-source-2`, read 11 bytes, was stopped and had its offsets reset
with DELETE /connectors/file-source-2/offsets (the worker keeps its key with a null value).
"""

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsets.formats.standalone_offsets_file import (
    HEADER,
    OffsetsFileError,
    decode,
    encode,
    hashmap_sizing,
)

FIXTURES = Path(__file__).resolve().parent.parent / "support" / "fixtures" / "standalone"
ONE_SOURCE = (FIXTURES / "one-source.offsets").read_bytes()
TWO_SOURCES = (FIXTURES / "two-sources-one-reset.offsets").read_bytes()
KEY = b'["file-source",{"filename":"/tmp/sa-vec/input.txt"}]'
RESET_KEY = b'["file-source-2",{"filename":"/tmp/sa-vec/input-2.txt"}]'

# No example database: it would write a .hypothesis directory into the project.
quick = settings(database=None, deadline=None, max_examples=200)


def test_it_reads_the_runtimes_file() -> None:
    assert decode(ONE_SOURCE) == {KEY: b'{"position":34}'}


def test_it_reads_a_reset_as_a_null_value() -> None:
    assert decode(TWO_SOURCES) == {RESET_KEY: None, KEY: b'{"position":34}'}
    assert list(decode(TWO_SOURCES)) == [RESET_KEY, KEY]


@pytest.mark.parametrize("data", [ONE_SOURCE, TWO_SOURCES], ids=["one", "reset"])
def test_it_writes_the_runtimes_bytes(data: bytes) -> None:
    assert encode(decode(data)) == data


@pytest.mark.parametrize(
    ("size", "expected"),
    [(0, (0, 16)), (1, (12, 16)), (12, (12, 16)), (13, (24, 32)), (24, (24, 32)), (25, (48, 64))],
)
def test_it_sizes_the_map_like_a_hashmap_filled_by_puts(size, expected) -> None:
    assert hashmap_sizing(size) == expected


def test_an_empty_map_has_no_table_yet() -> None:
    assert (
        encode({})
        == HEADER + struct.pack(">fi", 0.75, 0) + b"\x77\x08" + struct.pack(">ii", 16, 0) + b"\x78"
    )
    assert decode(encode({})) == {}


entries = st.dictionaries(
    st.binary(max_size=40), st.one_of(st.none(), st.binary(max_size=40)), max_size=30
)


@quick
@given(entries)
def test_decoding_what_it_encodes_gives_the_entries_back(mapping) -> None:
    assert decode(encode(mapping)) == mapping
    assert list(decode(encode(mapping))) == list(mapping)


@quick
@given(entries, st.data())
def test_every_truncation_is_refused_with_its_position(mapping, data) -> None:
    encoded = encode(mapping)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(OffsetsFileError) as caught:
        decode(encoded[:cut])
    assert 0 <= caught.value.position <= cut
    assert f"at byte {caught.value.position}" in str(caught.value)


@quick
@given(entries, st.data())
def test_a_flipped_byte_is_refused_or_still_a_well_formed_map(mapping, data) -> None:
    encoded = bytearray(encode(mapping))
    index = data.draw(st.integers(0, len(encoded) - 1))
    encoded[index] ^= data.draw(st.integers(1, 255))
    try:
        decoded = decode(bytes(encoded))
    except OffsetsFileError as exc:
        # A flipped length can make an array take the bytes after it: the file then ends
        # early, at its last byte + 1, the position a truncation names too.
        assert 0 <= exc.position <= len(encoded)
        assert f"at byte {exc.position}" in str(exc)
    else:
        # A flip inside key or value bytes (or the ignored sizing words) still reads.
        assert len(decoded) == len(mapping)


def test_it_refuses_another_file_with_the_first_differing_byte() -> None:
    with pytest.raises(OffsetsFileError, match=r"at byte 0\)"):
        decode(b"name=value\n")
    other_class = ONE_SOURCE.replace(b"java.util.HashMap", b"java.util.TreeMap")
    with pytest.raises(OffsetsFileError, match=r"at byte 18\)"):
        decode(other_class)


def test_an_empty_file_is_refused() -> None:
    # The runtime itself loads an empty or cut file as no offsets (it ignores EOFException).
    with pytest.raises(OffsetsFileError, match="ends inside"):
        decode(b"")


def test_a_length_past_the_end_is_an_error_not_an_allocation() -> None:
    length_at = ONE_SOURCE.index(KEY) - 4
    huge = ONE_SOURCE[:length_at] + struct.pack(">i", 2**31 - 1) + ONE_SOURCE[length_at + 4 :]
    with pytest.raises(OffsetsFileError, match=f"at byte {length_at + 4}"):
        decode(huge)


def test_a_negative_length_is_refused() -> None:
    length_at = ONE_SOURCE.index(KEY) - 4
    negative = ONE_SOURCE[:length_at] + struct.pack(">i", -1) + ONE_SOURCE[length_at + 4 :]
    with pytest.raises(OffsetsFileError, match=f"negative length for .*at byte {length_at}"):
        decode(negative)


def test_bytes_after_the_map_are_refused() -> None:
    after = f"1 bytes after the HashMap .at byte {len(ONE_SOURCE)}"
    with pytest.raises(OffsetsFileError, match=after):
        decode(ONE_SOURCE + b"\x00")


def test_a_null_key_and_a_repeated_key_are_refused() -> None:
    null_key = ONE_SOURCE.replace(b"ur\x00\x02[B", b"p", 1)
    with pytest.raises(OffsetsFileError, match="null key"):
        decode(null_key)
    repeated = encode({KEY: None, b"x" * len(KEY): None}).replace(b"x" * len(KEY), KEY)
    with pytest.raises(OffsetsFileError, match="repeated"):
        decode(repeated)
    with pytest.raises(ValueError, match="null key"):
        encode({None: b"{}"})


def test_a_reference_to_the_map_is_not_a_byte_array() -> None:
    value_at = ONE_SOURCE.index(b"uq\x00~\x00\x02")
    to_map = ONE_SOURCE[:value_at] + b"q\x00~\x00\x01" + ONE_SOURCE[value_at + 6 :]
    with pytest.raises(OffsetsFileError, match=f"other than a byte.*at byte {value_at}"):
        decode(to_map)


def test_a_reference_to_an_earlier_array_reads_it_again() -> None:
    value_at = ONE_SOURCE.index(b"uq\x00~\x00\x02")
    same_as_key = ONE_SOURCE[:value_at] + b"q\x00~\x00\x03x"
    assert decode(same_as_key) == {KEY: KEY}
