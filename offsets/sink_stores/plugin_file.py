"""The project's own ExternalOffsetsSink's store: a Java properties file of
`topic:partition=next offset` lines, written by `Properties.store` (its keys escape ':').

Read where the dashboard runs (a shared volume, or a copy); a file not there yet holds no
offsets, as the plugin reads it. Written atomically (aside, fsync, rename), like the plugin.
"""

import os
import tempfile
from pathlib import Path

from offsets import tuning
from offsets.kafka import files
from offsets.sink_stores.base import StoreOffsets, StoreSetting, StoreUnreadable

# Properties.load's escapes beyond "\<char> is <char>".
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
# Properties.store escapes these in a key (and a leading space; topic names hold none).
_KEY_SPECIALS = "\\=:#! \t\n\r\f"


def read(store: StoreSetting) -> StoreOffsets:
    """The offsets the file holds ({} when there is no file yet).

    Read as hostile data (`files.read_file`): the path may name any file the server can
    open, so a refusal names the file and the line, never what the line holds.
    """
    try:
        data = files.read_file(store.path, max_bytes=tuning.SINK_STORE_FILE_MAX_BYTES)
    except files.FileRefused as exc:
        if exc.missing:
            return {}
        raise StoreUnreadable(f"The offsets file {exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise StoreUnreadable(f"{store.path}, line {line} is not UTF-8") from None
    return parse(text, name=store.path)


def parse(text: str, *, name: str = "the offsets file") -> StoreOffsets:
    """The offsets of a properties file as the plugin reads it: the key split at its last
    ':' into topic and partition, the value a long. Anything else is refused, with its line
    number and what was expected there, never the line itself."""
    offsets: StoreOffsets = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip(" \t\f")
        if not stripped or stripped[0] in "#!":
            continue
        key, value = _split(stripped)
        topic, colon, partition = key.rpartition(":")
        try:
            if not colon or not topic:
                raise ValueError(key)
            offsets[(topic, int(partition))] = int(value)
        except ValueError:
            raise StoreUnreadable(
                f"{name}, line {number}: expected topic:partition=offset (a Java properties line)"
            ) from None
    return offsets


def render(offsets: StoreOffsets) -> str:
    """The file's text for `offsets`, as Properties.store writes it (keys escaped)."""
    lines = ["#Written by the offsets dashboard"]
    for (topic, partition), offset in sorted(offsets.items()):
        key = "".join(f"\\{c}" if c in _KEY_SPECIALS else c for c in f"{topic}:{partition}")
        lines.append(f"{key}={offset}")
    return "\n".join(lines) + "\n"


def write(store: StoreSetting, offsets: StoreOffsets) -> None:
    """Replace the file with `offsets`: written aside in its folder, synced, then renamed over
    it, so a crash leaves the old file or the new one, never half of one."""
    path = Path(store.path)
    handle, aside = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(render(offsets))
            out.flush()
            os.fsync(out.fileno())
        os.replace(aside, path)
    except BaseException:
        Path(aside).unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)  # the rename itself survives a crash
    finally:
        os.close(folder)


def _split(line: str) -> tuple[str, str]:
    """A logical line's key and value, as Properties.load splits and unescapes them."""
    key: list[str] = []
    at = 0
    while at < len(line):
        char = line[at]
        if char == "\\" and at + 1 < len(line):
            key.append(_ESCAPES.get(line[at + 1], line[at + 1]))
            at += 2
            continue
        if char in "=: \t\f":
            break
        key.append(char)
        at += 1
    rest = line[at:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return "".join(key), rest
