"""How a connector's name travels in a URL path segment, whatever the name holds.

Connect accepts any string as a name: empty, `.`, `..`, `/`, control characters, lone
surrogates. A plain name stays readable in the URL; any other is written as `~` and the
base64url of its UTF-8 bytes (surrogates kept with "surrogatepass"), so no browser or server
resolves it as a dot segment, splits it at a slash, or cannot encode it.
"""

import base64
import binascii
import re

MARK = "~"

# What forces the encoded form: a slash or backslash (browsers treat `\` as `/` in http URLs),
# control characters (C0, DEL, C1), surrogates, and the mark itself at the start.
_UNSAFE = re.compile(r"[/\\\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def is_plain(name: str) -> bool:
    """Whether `name` can stand in a path segment as itself."""
    return name not in ("", ".", "..") and not name.startswith(MARK) and not _UNSAFE.search(name)


def to_segment(name: str) -> str:
    """Return the path segment (before percent-encoding) that stands for `name`."""
    if is_plain(name):
        return name
    data = name.encode("utf-8", "surrogatepass")
    return MARK + base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def from_segment(segment: str) -> str:
    """Return the name a path segment stands for; ValueError if it is not a valid encoding."""
    if not segment.startswith(MARK):
        return segment
    body = segment[len(MARK) :]
    try:
        data = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_", validate=True)
        return data.decode("utf-8", "surrogatepass")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"not a connector name: {segment!r}") from exc


class ConnectorNameConverter:
    """The `<connector:...>` path converter: any connector name, reversible both ways."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return from_segment(value)

    def to_url(self, value: str) -> str:
        return to_segment(value)
