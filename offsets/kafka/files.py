"""Files an admin points the dashboard at, read as hostile data: a standalone worker's offsets
file, a sink's offsets store, a client setting's `${file:...}`, the Connect TLS files.

Such a path may name anything the web server can open: a FIFO (whose read waits for a writer
without end, holding a request thread), a device, a directory, a socket, a file of gigabytes,
or a secret of the server's (/proc/self/environ). So only a regular file is read, at most a
cap of bytes, and a refusal names the file and what it is, never a byte of what it holds.

A symlink is followed: these paths are often links by design (a Kubernetes secret or
ConfigMap volume links each file through `..data/`).

A worker's answer is bounded by a deadline; a file needs none: reading a regular file waits
on no other party, so the non-blocking open and the refusal of anything else are its
deadline.
"""

import os
import stat

# What a path is, in the words of a refusal, for each kind of file that is not regular.
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)
# O_NONBLOCK: opening a FIFO waits for a writer without it. O_NOCTTY: a terminal swapped in
# after the check never becomes the server's controlling terminal.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_CHUNK_BYTES = 2**20


class FileRefused(Exception):
    """A file that cannot be read, or is not one to read. `reason` says which without
    quoting the file ("is a FIFO, not a regular file"); `missing`: it does not exist."""

    def __init__(self, path: str, reason: str, *, missing: bool = False) -> None:
        super().__init__(f"{path} {reason}")
        self.path = path
        self.reason = reason
        self.missing = missing


def read_file(path: str, *, max_bytes: int) -> bytes:
    """The bytes of the regular file at `path` (a symlink followed); FileRefused for anything
    else, for a file larger than `max_bytes`, or one that cannot be read."""
    # Checked before the open too: opening a device can itself act, a socket cannot be opened.
    check_regular(path)
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise _unreadable(path, exc) from None
    try:
        # What was opened, whatever the path names by now.
        found = os.fstat(descriptor)
        _refuse_kind(path, found.st_mode)
        _refuse_size(path, found.st_size, max_bytes)
        data = _read_at_most(descriptor, max_bytes + 1)
    except OSError as exc:
        raise _unreadable(path, exc) from None
    finally:
        os.close(descriptor)
    if len(data) > max_bytes:
        raise FileRefused(path, f"grew past the {_size(max_bytes)} the dashboard reads")
    return data


def check_regular(path: str) -> None:
    """Raise FileRefused unless `path` names a regular file (a symlink followed).

    For a file a library opens itself (OpenSSL's certificates): it opens no FIFO the check
    refused, though a file replaced between the two escapes it.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise _unreadable(path, exc) from None
    _refuse_kind(path, mode)


def _refuse_kind(path: str, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "something else")
    raise FileRefused(path, f"is {kind}, not a regular file")


def _refuse_size(path: str, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise FileRefused(
            path, f"is {_size(size)}, larger than the {_size(max_bytes)} the dashboard reads"
        )


def _read_at_most(descriptor: int, limit: int) -> bytes:
    chunks = []
    left = limit
    while left > 0:
        chunk = os.read(descriptor, min(left, _CHUNK_BYTES))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _unreadable(path: str, exc: OSError) -> FileRefused:
    reason = f"cannot be read: {exc.strerror or type(exc).__name__}"
    return FileRefused(path, reason, missing=isinstance(exc, FileNotFoundError))


def _size(count: int) -> str:
    if count >= 2**20 and count % 2**20 == 0:
        return f"{count // 2**20} MiB"
    if count >= 2**20:
        return f"{count / 2**20:.1f} MiB"
    if count >= 2**10:
        return f"{count / 2**10:.1f} KiB"
    return f"{count:,} bytes"
