"""What a page shows of one record's key, value and headers: pure rules, no I/O.

A record's bytes are data of any kind. Shown as text when they decode as UTF-8, as hex
otherwise, both cut at a cap that says so; the Confluent wire format (magic byte 0, then a
4-byte big-endian schema id) is named with its schema id and its payload previewed after those
five bytes. Secrets are masked by the rules configs use (`masking`): a JSON object's field whose
name is secret is masked whole, any other text through `mask_text`, and a header whose name is
secret shows no value. Where a sink reads next before its first commit follows its consumer's
`auto.offset.reset` (`reset_policy`, `next_position`).
"""

import codecs
import json
from dataclasses import dataclass

from offsets.domain.masking import MASK, is_secret_name, mask_text, prefix_between_tokens

# How many characters of a text, and how many bytes of a binary, a preview shows.
TEXT_CAP = 2000
HEX_CAP = 512
CONFLUENT_MAGIC = 0
CONFLUENT_HEADER = 5
# Connect's default for a sink's consumer: a group without a commit starts at the log start.
SINK_DEFAULT_RESET = "earliest"


@dataclass(frozen=True)
class Preview:
    """A key's or value's bytes as shown: `text` is what the page prints."""

    kind: str  # "null", "empty", "text", "json", "hex"
    text: str
    size: int  # bytes in the record
    cut: bool = False  # the text stops before the end
    schema_id: int | None = None  # Confluent wire format: its schema id


@dataclass(frozen=True)
class Header:
    name: str
    value: Preview


def preview(data: bytes | None, *, text_cap: int = TEXT_CAP, hex_cap: int = HEX_CAP) -> Preview:
    """Show `data` as text when it decodes as UTF-8, as hex otherwise, masked and capped."""
    if data is None:
        return Preview("null", "", 0)
    if not data:
        return Preview("empty", "", 0)
    schema_id = None
    payload = data
    if len(data) >= CONFLUENT_HEADER and data[0] == CONFLUENT_MAGIC:
        schema_id = int.from_bytes(data[1:CONFLUENT_HEADER], "big")
        payload = data[CONFLUENT_HEADER:]
    shown = _shown(payload, text_cap=text_cap, hex_cap=hex_cap)
    return Preview(shown.kind, shown.text, len(data), shown.cut, schema_id)


def _shown(payload: bytes, *, text_cap: int, hex_cap: int) -> Preview:
    # Only the bytes a preview can show are decoded and masked (a record may hold megabytes);
    # a multi-byte character cut at the window's end is left out, not an error.
    window = payload[: text_cap * 4]
    truncated = len(window) < len(payload)
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(window, final=not truncated)
    except UnicodeDecodeError:
        text = None
    if text is not None and _printable(text):
        masked, kind = _masked_text(text, whole=not truncated)
        if truncated or len(masked) > text_cap:
            # Cut between tokens, so that no secret is cut into something that no longer
            # looks like one. An unbroken run is cut where the cap is only when every rule
            # saw the whole text; past the window it might be a secret's first part.
            cut = prefix_between_tokens(masked, text_cap)
            if not cut and not truncated:
                cut = masked[:text_cap]
            return Preview(kind, cut, len(payload), cut=True)
        return Preview(kind, masked, len(payload))
    shown = payload[:hex_cap]
    return Preview("hex", shown.hex(" "), len(payload), cut=len(payload) > hex_cap)


def _printable(text: str) -> bool:
    """Text a person can read: no control characters but tabs and line breaks."""
    return all(char.isprintable() or char in "\t\r\n" for char in text)


def _masked_text(text: str, *, whole: bool) -> tuple[str, str]:
    """The text with secrets masked: a whole JSON document field by field, else as any text."""
    stripped = text.lstrip()
    if whole and stripped[:1] in ("{", "["):
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        if isinstance(document, dict | list):
            return json.dumps(_masked_json(document), ensure_ascii=False, indent=1), "json"
    return mask_text(text), "text"


def _masked_json(value: object) -> object:
    if isinstance(value, dict):
        return {
            name: MASK
            if is_secret_name(str(name)) and item not in (None, "")
            else _masked_json(item)
            for name, item in value.items()
        }
    if isinstance(value, list):
        return [_masked_json(item) for item in value]
    if isinstance(value, str):
        return mask_text(value)
    return value


def headers(pairs: list[tuple[str, bytes | None]] | None, *, text_cap: int = 200) -> list[Header]:
    """A record's headers in order, each value previewed; a secret name's value is masked."""
    shown = []
    for name, value in pairs or ():
        if is_secret_name(name) and value:
            shown.append(Header(name, Preview("text", MASK, len(value))))
        else:
            shown.append(Header(name, preview(value, text_cap=text_cap, hex_cap=text_cap // 2)))
    return shown


def reset_policy(config: dict[str, str]) -> str:
    """Where a sink's consumer starts without a commit: its `auto.offset.reset`, which
    `consumer.override.auto.offset.reset` in the connector's config changes."""
    policy = str(config.get("consumer.override.auto.offset.reset") or SINK_DEFAULT_RESET)
    return policy.strip().lower()


@dataclass(frozen=True)
class Position:
    """Where a sink reads next in a partition: `offset` None when there is nothing to read."""

    offset: int | None
    note: str = ""


def next_position(committed: int | None, reset: str, log_start: int, log_end: int) -> Position:
    """The offset a sink reads next: its committed offset, or where its reset policy puts it
    before its first commit or when the committed offset is no longer in the log."""
    if committed is not None and log_start <= committed < log_end:
        return Position(committed)
    if committed is not None and committed == log_end:
        return Position(None, "Nothing to read yet: the sink has read to the log end.")
    if committed is None:
        why = "Never committed"
    elif committed < log_start:
        why = f"Committed offset {committed} is before the log start {log_start} (deleted)"
    else:
        why = f"Committed offset {committed} is beyond the log end {log_end}"
    if reset == "earliest" and log_start < log_end:
        return Position(log_start, f"{why}: the sink starts at the log start ({reset}).")
    if reset == "earliest" or reset == "latest":
        return Position(
            None, f"{why}: the sink starts at the log end ({reset}); nothing to read yet."
        )
    return Position(
        None,
        f"{why}: the sink's auto.offset.reset is {reset!r}, so it fails "
        "rather than choose a position.",
    )
