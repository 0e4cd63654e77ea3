"""The names downloads are saved under: `<cluster>-<connector>-<kind>-<YYYYMMDDTHHMMZ>.<ext>`,
one name per export wherever it is offered (a page or the API). Pure.

Cluster and connector names come from Kafka: they are data, never a path nor a header. A name
keeps its letters and digits (any script: the header carries them as RFC 6266's `filename*`)
and `.`, `_`, `-`; anything else (a slash, a quote, a control character, a lone surrogate,
`<`, `:`, `*`, which some file systems refuse) becomes `_`.
"""

import re
from datetime import UTC, datetime

# A part of a name this long at most: the whole stays under the 255 bytes file systems allow.
MAX_PART = 80
_RUNS = re.compile(r"_{2,}")


def safe_part(text: str) -> str:
    """`text` with only characters safe in a file name (letters, digits, `.`, `_`, `-`)."""
    kept = "".join(
        char if (char.isalnum() and char.isprintable()) or char in "._-" else "_" for char in text
    )
    # No hidden file, no name that reads as an option, and never "." or "..".
    kept = _RUNS.sub("_", kept).lstrip(".-")[:MAX_PART]
    return kept or "_"


def download_name(
    cluster: str, connector: str | None, kind: str, at: datetime, extension: str = "json"
) -> str:
    """The file name of an export of `cluster` (of one `connector`, or of several: None) made
    at `at`: `live-audit-source-offsets-20261128T2331Z.json`, `live-offsets-20261128T2331Z.json`."""
    parts = [safe_part(cluster)]
    if connector is not None:
        parts.append(safe_part(connector))
    parts += [kind, at.astimezone(UTC).strftime("%Y%m%dT%H%MZ")]
    return "-".join(parts) + "." + extension


def export_name(
    cluster: str,
    connectors: list[str],
    *,
    history: bool,
    configmap: bool,
    at: datetime,
    extension: str = "json",
) -> str:
    """The name of an offsets export, the same from the pages and the API: one connector's
    under its name, several as how many, all of the cluster's (none named) under none. A
    ConfigMap is `yaml` from the pages, `json` from the API."""
    if len(connectors) == 1:
        connector: str | None = connectors[0]
    else:
        connector = f"{len(connectors)}-connectors" if connectors else None
    kind = "offsets-configmap" if configmap else "offsets-history" if history else "offsets"
    return download_name(cluster, connector, kind, at, extension)
