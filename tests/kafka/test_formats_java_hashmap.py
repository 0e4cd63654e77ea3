import itertools

import pytest

from offsets.formats.jackson import dumps_key
from offsets.formats.java_hashmap import java_hashmap_order, java_string_hash


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        # 116*31+111 = 3707; *31+112 = 115029; *31+105 = 3566004; *31+99 = 110546223.
        ("topic", 110546223),
        # The classic collision: 'A'*31+'a' = 65*31+97 = 2112 = 66*31+66 = 'B'*31+'B'.
        ("Aa", 2112),
        ("BB", 2112),
        # Well known to overflow to exactly Integer.MIN_VALUE.
        ("polygenelubricants", -(2**31)),
        # U+1F600 is two UTF-16 chars, 0xD83D and 0xDE00: 55357*31 + 56832 = 1772899.
        ("😀", 1772899),
    ],
)
def test_it_hashes_strings_like_java(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_it_orders_a_mirror_maker_2_partition_like_java() -> None:
    # MirrorUtils.wrapPartition puts "topic", then "partition", then "cluster" into a new
    # HashMap<>() (16 buckets). Bucket = (h ^ (h >>> 16)) & 15, i.e. the low nibble of h XOR
    # the low nibble of h >>> 16:
    #   "topic"     h = 110546223   = 0x0696CD2F: 0xF ^ 0x6 (from 0x0696) = 9
    #   "partition" h = -1799810326 = 0x94B912EA: 0xA ^ 0x9 (from 0x94B9) = 3
    #   "cluster"   h = 872092154   = 0x33FB11FA: 0xA ^ 0xB (from 0x33FB) = 1
    # Iteration goes bucket by bucket: cluster (1), partition (3), topic (9).
    assert java_string_hash("partition") == -1799810326
    assert java_string_hash("cluster") == 872092154
    order = java_hashmap_order(["topic", "partition", "cluster"])
    assert order == ["cluster", "partition", "topic"]

    values = {"topic": "orders", "partition": 0, "cluster": "us-east"}
    key = dumps_key("MirrorSourceConnector", {name: values[name] for name in order})
    assert key == b'["MirrorSourceConnector",{"cluster":"us-east","partition":0,"topic":"orders"}]'


def test_it_keeps_insertion_order_within_a_bucket() -> None:
    # "q" (113) and "a" (97) share bucket 113 & 15 = 97 & 15 = 1 in a 16-bucket table.
    keys = ["q", *"abcdefghijk"]  # 12 keys: exactly the threshold, no resize
    assert java_hashmap_order(keys) == ["q", *"abcdefghijk"]


def test_it_resizes_when_the_thirteenth_key_arrives() -> None:
    # 13 > 16 * 0.75 doubles the table to 32; "q" moves to bucket 113 & 31 = 17, after
    # "a".."l" in buckets 1..12.
    keys = ["q", *"abcdefghijkl"]
    assert java_hashmap_order(keys) == [*"abcdefghijkl", "q"]


def test_it_resizes_instead_of_treeifying_a_crowded_bucket_in_a_small_table() -> None:
    # Nine keys whose codes are 1 mod 16 all land in bucket 1. The ninth makes a chain of 9,
    # and treeifyBin resizes a table smaller than 64 instead: in 32 buckets the codes that
    # are 1 mod 32 (33, 65, 97, 129, 161) stay in bucket 1, the others go to bucket 17.
    codes = [33, 49, 65, 81, 97, 113, 129, 145, 161]
    order = java_hashmap_order([chr(code) for code in codes])
    assert [ord(key) for key in order] == [33, 65, 97, 129, 161, 49, 81, 113, 145]


def test_it_keeps_a_rewritten_key_in_its_place() -> None:
    assert java_hashmap_order(["q", "a", "q"]) == ["q", "a"]


def test_it_refuses_to_guess_the_order_of_a_treeified_bucket() -> None:
    # Every string of four "Aa"/"BB" blocks has the same hash: 16 keys in one bucket. The
    # 9th and 10th resize the table to 32 then 64; the 11th would treeify.
    colliding = ["".join(blocks) for blocks in itertools.product(["Aa", "BB"], repeat=4)]
    assert len({java_string_hash(key) for key in colliding}) == 1
    with pytest.raises(ValueError, match="treeify"):
        java_hashmap_order(colliding)
