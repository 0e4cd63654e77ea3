import pytest

from offsets.formats.murmur2 import java_partition, murmur2, to_positive


# All of Kafka's own vectors: clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java,
# testMurmur2.
@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_it_hashes_like_kafkas_utils_murmur2(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_it_hashes_the_empty_key() -> None:
    # No block and no tail: only the final mix of the seed. Cross-checked by replaying the
    # Java int arithmetic with numpy.int32.
    assert murmur2(b"") == 275646681


def test_it_picks_the_java_producers_partition() -> None:
    # toPositive(-973932308) = -973932308 & 0x7fffffff = 2**31 - 973932308 = 1173551340,
    # and 1173551340 = 25 * 46942053 + 15.
    assert java_partition(b"21", 25) == 15
    # 479470107 is already positive: 479470107 = 5 * 95894021 + 2.
    assert java_partition(b"abc", 5) == 2


def test_it_clears_the_sign_bit_instead_of_taking_the_absolute_value() -> None:
    assert to_positive(-(2**31)) == 0
    assert to_positive(-1) == 2**31 - 1


def test_it_puts_everything_on_partition_zero_of_a_single_partition_topic() -> None:
    assert java_partition(b"foobar", 1) == 0


def test_it_refuses_a_topic_without_partitions() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        java_partition(b"21", 0)
