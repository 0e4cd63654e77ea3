"""Kafka's murmur2 hash and the Java producer's partition choice for keyed records.

The Connect runtime's producer sends offsets and status records without an explicit
partition, so the Java client's ``BuiltInPartitioner.partitionForKey`` picks
``Utils.toPositive(Utils.murmur2(key)) % numPartitions``. librdkafka's default partitioner
(``consistent_random``, CRC32) picks differently, so writes from Python must pass the
partition computed here.
"""

_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Hash ``data`` exactly like ``org.apache.kafka.common.utils.Utils.murmur2``.

    Returns the signed 32-bit Java ``int``.
    """
    # Java's int arithmetic wraps at 32 bits and >>> is an unsigned shift: keep every
    # intermediate as an unsigned 32-bit value and convert to signed only at the end.
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * _M) & _MASK
        k ^= k >> _R
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    # The Java switch falls through from case 3 to case 1.
    remaining = length % 4
    if remaining == 3:
        h ^= data[whole + 2] << 16
    if remaining >= 2:
        h ^= data[whole + 1] << 8
    if remaining >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Clear the sign bit like ``Utils.toPositive`` (not ``abs``: MIN_VALUE maps to 0)."""
    return number & 0x7FFFFFFF


def java_partition(key: bytes, num_partitions: int) -> int:
    """Return the partition the Java producer picks for a record with this key."""
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be at least 1, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions
