"""Predict the iteration order of a ``java.util.HashMap<String, ?>``.

A Java source connector usually builds its partition map as a ``HashMap``; JsonConverter then
writes the fields in that map's iteration order, and those bytes become the offsets-topic key.
To write a key for a partition the runtime has not written yet, we must reproduce that order.
"""

from collections.abc import Iterable

_DEFAULT_CAPACITY = 16  # HashMap.DEFAULT_INITIAL_CAPACITY
_TREEIFY_THRESHOLD = 8  # HashMap.TREEIFY_THRESHOLD
_MIN_TREEIFY_CAPACITY = 64  # HashMap.MIN_TREEIFY_CAPACITY


def java_string_hash(s: str) -> int:
    """Return Java's ``String.hashCode()`` for ``s`` as a signed 32-bit int."""
    # Java strings are UTF-16: a code point above U+FFFF counts as two chars (a surrogate pair).
    h = 0
    for unit in _utf16_units(s):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """Return the iteration order of a default ``new HashMap<>()`` after ``put``-ing ``keys``.

    Models ``HashMap.putVal``/``resize`` for the default constructor: a table of 16 buckets
    created on the first put, load factor 0.75 (doubling when size exceeds 3/4 of the table),
    bucket index ``(n - 1) & (h ^ (h >>> 16))``, and, within a bucket, insertion order (new
    nodes go to the tail and ``resize`` splits buckets preserving relative order). Putting a key
    again keeps its place. A bucket reaching 9 nodes in a table smaller than 64 triggers
    ``treeifyBin``'s resize, which is modelled; a real treeification (a 9-node bucket in a table
    of 64 or more) reorders that bucket and is not modelled, so it raises ValueError. Maps built
    with an explicit capacity, ``LinkedHashMap``/``TreeMap``/``Map.of`` have other orders.
    """
    capacity = 0
    ordered: list[tuple[int, str]] = []  # (spread hash, key) in insertion order
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            continue
        seen.add(key)
        spread = _spread(java_string_hash(key))
        if capacity == 0:
            capacity = _DEFAULT_CAPACITY
        index = spread & (capacity - 1)
        bucket_size = sum(1 for other, _ in ordered if other & (capacity - 1) == index)
        ordered.append((spread, key))
        # putVal calls treeifyBin when appending makes a chain of TREEIFY_THRESHOLD + 1 nodes;
        # below MIN_TREEIFY_CAPACITY treeifyBin only resizes.
        if bucket_size + 1 > _TREEIFY_THRESHOLD:
            if capacity < _MIN_TREEIFY_CAPACITY:
                capacity *= 2
            else:
                raise ValueError(
                    f"{bucket_size + 1} keys collide in one HashMap bucket; Java would treeify it "
                    "and its iteration order is not modelled"
                )
        if len(ordered) > capacity * 3 // 4:
            capacity *= 2
    # Iteration walks the table bucket by bucket; sorted() is stable, keeping insertion order
    # within a bucket.
    return [key for _, key in sorted(ordered, key=lambda item: item[0] & (capacity - 1))]


def _spread(h: int) -> int:
    # HashMap.hash(): h ^ (h >>> 16), as an unsigned 32-bit value so the mask works directly.
    unsigned = h & 0xFFFFFFFF
    return unsigned ^ (unsigned >> 16)


def _utf16_units(s: str) -> list[int]:
    data = s.encode("utf-16-le", "surrogatepass")
    return [data[i] | data[i + 1] << 8 for i in range(0, len(data), 2)]
