"""Pure rules about Connect workers: the list of REST URLs, and what a worker version supports."""

import re
from dataclasses import dataclass

# Kafka versions that brought each REST feature (a worker of an older version answers 404).
OFFSETS_READ_SINCE = (3, 5)  # KIP-875: GET /connectors/{c}/offsets
OFFSETS_WRITE_SINCE = (3, 6)  # KIP-875: PATCH and DELETE /connectors/{c}/offsets
CREATE_STOPPED_SINCE = (3, 7)  # KIP-980: POST /connectors with "initial_state": "STOPPED"

_URL = re.compile(r"^https?://[A-Za-z0-9._~%-]+(:\d{1,5})?(/\S*)?$")
# Nine digits at most: int() refuses thousands of digits, and no version has a tenth.
_VERSION = re.compile(r"^(\d{1,9})\.(\d{1,9})(?:\.\d+)?(.*)$")
# Confluent Platform's Connect reports its own version ("7.6.0-ccs"): 7.x ships Kafka 3.x and
# 8.x ships Kafka 4.x, minor for minor.
_CONFLUENT_SUFFIX = re.compile(r"^-(ccs|ce)\b")
_CONFLUENT_MAJORS = {7: 3, 8: 4}


def parse_connect_urls(text: str) -> tuple[str, ...]:
    """Split a comma-separated list of worker URLs; raise ValueError naming a bad one.

    Blanks around commas and trailing slashes go; duplicates keep their first place, since the
    URLs are tried in order.
    """
    urls: list[str] = []
    for part in (text or "").split(","):
        url = part.strip().rstrip("/")
        if not url:
            continue
        if not _URL.match(url):
            raise ValueError(
                f"{url!r} is not an http:// or https:// URL, e.g. http://connect:8083."
            )
        if url not in urls:
            urls.append(url)
    return tuple(urls)


@dataclass(frozen=True)
class WorkerCapabilities:
    """Which REST features of KIP-875 and KIP-980 a worker of this version has."""

    version: str
    kafka_version: tuple[int, int] | None
    offsets_read: bool
    offsets_write: bool
    create_stopped: bool

    @property
    def known(self) -> bool:
        return self.kafka_version is not None

    def as_dict(self) -> dict[str, object]:
        return {
            "version": self.version,
            "kafka_version": ".".join(map(str, self.kafka_version)) if self.kafka_version else None,
            "offsets_read": self.offsets_read,
            "offsets_write": self.offsets_write,
            "create_stopped": self.create_stopped,
        }


def kafka_version(version: str) -> tuple[int, int] | None:
    """The Apache Kafka major.minor a worker's reported version stands for, or None."""
    match = _VERSION.match((version or "").strip())
    if not match:
        return None
    major, minor, rest = int(match[1]), int(match[2]), match[3]
    if _CONFLUENT_SUFFIX.match(rest):
        if major not in _CONFLUENT_MAJORS:
            return None
        major = _CONFLUENT_MAJORS[major]
    return major, minor


def worker_capabilities(version: str) -> WorkerCapabilities:
    """What a worker reporting `version` (GET / "version") supports; nothing when unknown."""
    kafka = kafka_version(version)
    return WorkerCapabilities(
        version=version,
        kafka_version=kafka,
        offsets_read=kafka is not None and kafka >= OFFSETS_READ_SINCE,
        offsets_write=kafka is not None and kafka >= OFFSETS_WRITE_SINCE,
        create_stopped=kafka is not None and kafka >= CREATE_STOPPED_SINCE,
    )
