"""Kafka client settings read from files: a value `${file:/run/secrets/kafka-password}` is that
file's content, read each time the cluster's settings are built.

So the database (and `add_cluster`'s command line, which `ps` shows) holds only where a
secret lives, and a renewed secret file takes effect at the next refresh or page, without
touching the cluster. Only a whole value is a reference: a value that merely contains one is
kept as typed, as librdkafka would take it.
"""

import re

from offsets import tuning
from offsets.kafka import files
from offsets.kafka.errors import KafkaUnavailable

REFERENCE = re.compile(r"\$\{file:(/[^}]+)\}")


def resolved(settings: dict) -> dict:
    """`settings` with every `${file:/path}` value replaced by the file's text.

    One trailing line break is dropped (what `echo` and most secret stores leave). Raises
    KafkaUnavailable naming the setting and the path, never the content, when a file cannot be
    read.
    """
    return {key: _value(key, value) for key, value in settings.items()}


def _value(key: str, value):
    if not isinstance(value, str):
        return value
    reference = REFERENCE.fullmatch(value)
    if reference is None:
        return value
    path = reference.group(1)
    try:
        # Read as hostile data (`files.read_file`): only a regular file, at most the cap.
        data = files.read_file(path, max_bytes=tuning.CLIENT_SETTING_FILE_MAX_BYTES)
        text = data.decode("utf-8")
    except files.FileRefused as exc:
        reason = exc.reason
    except UnicodeDecodeError as exc:
        reason = f"is not UTF-8 (byte {exc.start})"
    else:
        return text.removesuffix("\n").removesuffix("\r")
    raise KafkaUnavailable(f"The client setting {key} is read from {path}, which {reason}.")
