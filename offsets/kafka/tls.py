"""TLS contexts for the HTTPS calls to Connect workers, built once per set of files.

Building a context reads the CA bundle, and OpenSSL 3 takes tens of milliseconds for that
(hundreds on a busy machine); every page that talks to a worker makes a `ConnectRest`. So a
context is kept and handed out again while its files stay as they were: a renewed
certificate or CA file (a new modification time or size) builds a new one at its next use.
An `SSLContext` is safe to share between threads once built, and nothing changes it after.
"""

import functools
import os
import ssl

from offsets.kafka import files


def context_for(ca_file: str = "", cert_file: str = "", key_file: str = "") -> ssl.SSLContext:
    """The verifying client context for these files ("" for none: the system's CAs).

    Raises OSError or ssl.SSLError when a file cannot be read or used, and files.FileRefused
    for a path that is no regular file (OpenSSL would wait on a FIFO without end); a failure
    is not kept, so the next call tries the files again.
    """
    for path in (ca_file, cert_file, key_file):
        if path:
            files.check_regular(path)
    ca_stamp = _stamp(ca_file or ssl.get_default_verify_paths().cafile or "")
    return _build(ca_file, cert_file, key_file, (ca_stamp, _stamp(cert_file), _stamp(key_file)))


def _stamp(path: str) -> tuple[int, int] | None:
    if not path:
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None  # reading it fails below, with the reason
    return found.st_mtime_ns, found.st_size


@functools.lru_cache(maxsize=32)
def _build(ca_file: str, cert_file: str, key_file: str, stamps: tuple) -> ssl.SSLContext:
    # `stamps` is only part of the key: new stamps, a new context.
    context = ssl.create_default_context(cafile=ca_file or None)
    if cert_file:
        context.load_cert_chain(cert_file, key_file or None)
    return context
