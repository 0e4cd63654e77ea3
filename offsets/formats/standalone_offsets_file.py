"""A standalone worker's offsets file (`offset.storage.file.filename`): decode and encode.

`FileOffsetBackingStore.save` copies its offsets into a `new HashMap<byte[], byte[]>()` and
writes it with one `ObjectOutputStream.writeObject`: the stream header, the HashMap's class
descriptor, its `writeObject` data (loadFactor, threshold, then in block data the bucket
count and size) and each entry's key and value as `byte[]` objects, the first with the `[B`
class descriptor and later ones naming it by handle; a null value (an offset reset, a
tombstone) is TC_NULL. The key and value bytes are the converter's, as in the offsets topic.

Only that shape is read: any other byte is refused with its position and what was expected
there, never its value (the path may name another file: its bytes are not for a page to
show), nothing is ever deserialised generically, and no length is trusted beyond the bytes
present. docs/formats.md
describes the file byte by byte.
"""

import struct
from collections.abc import Mapping

STREAM_MAGIC = b"\xac\xed\x00\x05"
TC_NULL = 0x70
TC_REFERENCE = 0x71
TC_CLASSDESC = 0x72
TC_OBJECT = 0x73
TC_ARRAY = 0x75
TC_BLOCKDATA = 0x77
TC_ENDBLOCKDATA = 0x78
BASE_HANDLE = 0x7E0000

# java.util.HashMap's class descriptor as ObjectOutputStream writes it: serialVersionUID
# 362498820763181265, flags SC_SERIALIZABLE | SC_WRITE_METHOD, the fields loadFactor (F) and
# threshold (I) in ObjectStreamClass's order, no annotations, no serializable superclass.
HASHMAP_DESCRIPTOR = (
    bytes([TC_CLASSDESC])
    + b"\x00\x11java.util.HashMap"
    + struct.pack(">q", 362498820763181265)
    + b"\x03\x00\x02"
    + b"F\x00\x0aloadFactor"
    + b"I\x00\x09threshold"
    + bytes([TC_ENDBLOCKDATA, TC_NULL])
)
# byte[]'s class descriptor: serialVersionUID -5984413125824719648, SC_SERIALIZABLE, no fields.
BYTE_ARRAY_DESCRIPTOR = (
    bytes([TC_CLASSDESC])
    + b"\x00\x02[B"
    + struct.pack(">q", -5984413125824719648)
    + b"\x02\x00\x00"
    + bytes([TC_ENDBLOCKDATA, TC_NULL])
)
HEADER = STREAM_MAGIC + bytes([TC_OBJECT]) + HASHMAP_DESCRIPTOR

# HashMap's defaults: DEFAULT_INITIAL_CAPACITY and DEFAULT_LOAD_FACTOR.
DEFAULT_CAPACITY = 16
DEFAULT_LOAD_FACTOR = 0.75


class OffsetsFileError(ValueError):
    """The bytes are not an offsets file FileOffsetBackingStore writes; `position` says where.

    The message says what was expected there and quotes no byte of the file.
    """

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} (at byte {position})")
        self.position = position


class _Reader:
    """The bytes read front to back, each read checked against what is left."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0
        # Handles in assignment order: True for the byte[] class descriptor, else the
        # object (None for the HashMap's descriptor and the HashMap itself).
        self.handles: list[object] = []

    def take(self, count: int, what: str) -> bytes:
        if count > len(self.data) - self.position:
            raise OffsetsFileError(
                f"The file ends inside {what} ({len(self.data) - self.position} bytes left)",
                self.position,
            )
        chunk = self.data[self.position : self.position + count]
        self.position += count
        return chunk

    def expect(self, expected: bytes, what: str) -> None:
        start = self.position
        chunk = self.data[start : start + len(expected)]
        if len(chunk) < len(expected) and chunk == expected[: len(chunk)]:
            raise OffsetsFileError(f"The file ends inside {what}", len(self.data))
        for offset, (got, wanted) in enumerate(zip(chunk, expected, strict=False)):
            if got != wanted:
                raise OffsetsFileError(
                    f"Not {what}: the byte 0x{wanted:02x} is expected", start + offset
                )
        self.take(len(expected), what)

    def byte(self, what: str) -> int:
        return self.take(1, what)[0]

    def int32(self, what: str) -> int:
        return struct.unpack(">i", self.take(4, what))[0]

    def new_handle(self, obj: object) -> None:
        self.handles.append(obj)

    def handle(self, what: str) -> object:
        start = self.position
        index = self.int32(what) - BASE_HANDLE
        if not 0 <= index < len(self.handles):
            raise OffsetsFileError(f"A reference to no earlier object in {what}", start)
        return self.handles[index]


def decode(data: bytes) -> dict[bytes, bytes | None]:
    """Return the file's entries, key bytes to value bytes (None for a reset), in file order.

    Raise OffsetsFileError, naming the byte position, for anything FileOffsetBackingStore does
    not write: another header or class, a truncated stream, a null or repeated key, or bytes
    after the map.
    """
    reader = _Reader(data)
    reader.expect(HEADER, "a Java serialization stream of a java.util.HashMap")
    reader.new_handle(None)  # the HashMap's class descriptor
    reader.new_handle(None)  # the HashMap
    start = reader.position
    load_factor = struct.unpack(">f", reader.take(4, "the HashMap's loadFactor"))[0]
    if not load_factor > 0:  # HashMap.readObject refuses it too (NaN included)
        raise OffsetsFileError("Illegal load factor: a positive float is expected", start)
    reader.int32("the HashMap's threshold")
    reader.expect(bytes([TC_BLOCKDATA, 8]), "the HashMap's block data (buckets and size)")
    reader.int32("the HashMap's bucket count")
    start = reader.position
    size = reader.int32("the HashMap's size")
    if size < 0:
        raise OffsetsFileError("Illegal mappings count: zero or more is expected", start)
    entries: dict[bytes, bytes | None] = {}
    for _ in range(size):
        start = reader.position
        key = _read_array(reader, "a key")
        if key is None:
            raise OffsetsFileError("A null key (the runtime never writes one)", start)
        if key in entries:
            # Java reads both (byte[] keys compare by identity) and keeps either, by chance.
            raise OffsetsFileError(
                "A key repeated (which one the runtime loads is undefined)", start
            )
        entries[key] = _read_array(reader, "a value")
    reader.expect(bytes([TC_ENDBLOCKDATA]), "the end of the HashMap")
    if reader.position != len(data):
        raise OffsetsFileError(
            f"{len(data) - reader.position} bytes after the HashMap", reader.position
        )
    return entries


def _read_array(reader: _Reader, what: str) -> bytes | None:
    """Read a byte[] (a new one, or a reference to an earlier one) or TC_NULL."""
    start = reader.position
    code = reader.byte(what)
    if code == TC_NULL:
        return None
    if code == TC_REFERENCE:
        earlier = reader.handle(what)
        if not isinstance(earlier, bytes):
            raise OffsetsFileError(f"A reference to something other than a byte[] in {what}", start)
        return earlier
    if code != TC_ARRAY:
        raise OffsetsFileError(
            f"Not a byte[] in {what}: TC_ARRAY, TC_REFERENCE or TC_NULL is expected", start
        )
    _read_byte_array_class(reader, what)
    start = reader.position
    length = reader.int32(f"the length of {what}")
    if length < 0:
        raise OffsetsFileError(f"A negative length for {what}", start)
    value = reader.take(length, what)
    reader.new_handle(value)
    return value


def _read_byte_array_class(reader: _Reader, what: str) -> None:
    start = reader.position
    code = reader.data[start] if start < len(reader.data) else None
    if code == TC_CLASSDESC:
        reader.expect(BYTE_ARRAY_DESCRIPTOR, f"byte[]'s class descriptor in {what}")
        reader.new_handle(True)
        return
    if code == TC_REFERENCE:
        reader.byte(what)
        if reader.handle(what) is not True:
            raise OffsetsFileError(f"An array of a class other than byte[] in {what}", start)
        return
    reader.byte(f"the class of {what}")  # raises at the end of the file
    raise OffsetsFileError(
        f"Not byte[]'s class in {what}: TC_CLASSDESC or TC_REFERENCE is expected", start
    )


def hashmap_sizing(size: int) -> tuple[int, int]:
    """Return (threshold, buckets) a `new HashMap<>()` has after `size` puts of new keys.

    The first put makes a table of 16 and each put past three quarters of it doubles it; an
    untouched map has no table, threshold 0, and reports 16 buckets (HashMap.capacity()).
    """
    if size == 0:
        return 0, DEFAULT_CAPACITY
    capacity = DEFAULT_CAPACITY
    while size > int(capacity * DEFAULT_LOAD_FACTOR):
        capacity *= 2
    return int(capacity * DEFAULT_LOAD_FACTOR), capacity


def encode(entries: Mapping[bytes, bytes | None]) -> bytes:
    """Return the file FileOffsetBackingStore writes for `entries` (key bytes to value bytes,
    None for a reset), the entries in the mapping's order.

    Java writes them in its HashMap's table order, which hangs on byte[] identity hashes; its
    reader accepts any order, so the mapping's order is kept.
    """
    if None in entries:
        raise ValueError("A null key: the runtime never writes one")
    threshold, buckets = hashmap_sizing(len(entries))
    parts = [
        HEADER,
        struct.pack(">fi", DEFAULT_LOAD_FACTOR, threshold),
        bytes([TC_BLOCKDATA, 8]),
        struct.pack(">ii", buckets, len(entries)),
    ]
    handles = 2  # the HashMap's class descriptor and the HashMap
    array_class: int | None = None
    for key, value in entries.items():
        for item in (key, value):
            if item is None:
                parts.append(bytes([TC_NULL]))
                continue
            if array_class is None:
                parts += [bytes([TC_ARRAY]), BYTE_ARRAY_DESCRIPTOR]
                array_class, handles = handles, handles + 1
            else:
                reference = struct.pack(">i", BASE_HANDLE + array_class)
                parts.append(bytes([TC_ARRAY, TC_REFERENCE]) + reference)
            parts.append(struct.pack(">i", len(item)) + bytes(item))
            handles += 1
    parts.append(bytes([TC_ENDBLOCKDATA]))
    return b"".join(parts)
