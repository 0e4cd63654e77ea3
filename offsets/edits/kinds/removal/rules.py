"""Pure rules of deleting a connector with its offsets: its keys, what moved, what is left."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from offsets.domain.edits import Observed
from offsets.formats.offset_records import SourceOffsetRecord

# One source partition in one offsets topic: (topic, exact key bytes).
TopicKey = tuple[str, bytes]


def connector_keys(
    latest: Mapping[str, Mapping[bytes, SourceOffsetRecord]], connector: str
) -> dict[TopicKey, SourceOffsetRecord]:
    """Every live key of `connector` in each offsets topic, in topic then key order.

    `latest` maps each topic to its records folded the runtime's way (tombstones removed).
    """
    found: dict[TopicKey, SourceOffsetRecord] = {}
    for topic, offsets in latest.items():
        for key in sorted(offsets):
            record = offsets[key]
            if record.connector == connector and record.value_bytes is not None:
                found[(topic, key)] = record
    return found


def moved(
    staged: Mapping[TopicKey, bytes | None], now: Mapping[TopicKey, bytes | None]
) -> list[Observed]:
    """Each staged key with its value then and now, plus every key that appeared since.

    A key that appeared since staging counts as moved: tombstoning the staged keys would leave
    it behind, so the approved plan no longer says what the apply would do.
    """
    observed = [
        Observed(label(topic, key), value, now.get((topic, key)))
        for (topic, key), value in staged.items()
    ]
    observed += [
        Observed(label(topic, key), None, value)
        for (topic, key), value in now.items()
        if (topic, key) not in staged
    ]
    return observed


def label(topic: str, key: bytes) -> str:
    """A source partition as messages name it: its topic and its exact key bytes as text."""
    return f"{topic}: {key.decode('utf-8', 'backslashreplace')}"


def leftovers(
    keys: Iterable[TopicKey], group_id: str, group: Mapping[tuple[str, int], int], exists: bool
) -> list[str]:
    """What a removal left behind, each as a sentence (empty: nothing is left)."""
    left: dict[str, int] = {}
    for topic, _key in keys:
        left[topic] = left.get(topic, 0) + 1
    problems = [f"{count} live key(s) of the connector in {topic}" for topic, count in left.items()]
    if group:
        problems.append(f"{len(group)} committed partition(s) in group {group_id}")
    if exists:
        problems.append("the connector still exists on the worker")
    return problems


@dataclass
class Steps:
    """The steps an apply took, in order, for its audit entry and its messages."""

    done: list[dict] = field(default_factory=list)
    # The first step that failed, in words; later steps are not taken.
    error: str = ""

    def add(self, step: str, message: str, **details: object) -> None:
        self.done.append({"step": step, "ok": True, "message": message, **details})

    def failed(self, step: str, message: str) -> None:
        self.done.append({"step": step, "ok": False, "message": message})
        self.error = self.error or message

    def text(self) -> str:
        """The steps taken as one sentence ("nothing" before the first)."""
        if not self.done:
            return "nothing"
        return " ".join(step["message"] for step in self.done)


def plan_lines(
    *,
    strategy: str,
    connector: str,
    tombstones: Mapping[str, int],
    group_id: str,
    group_partitions: int,
) -> list[str]:
    """The steps a removal or clean-up will take, as its edit page lists them."""
    lines = []
    if strategy == "remove":
        lines.append(
            f"Stop {connector} through the Connect worker and wait for STOPPED with no tasks."
        )
        lines.append(
            "Reset its offsets through the worker (DELETE /connectors/…/offsets) when the "
            "worker supports it (Connect 3.6+)."
        )
    for topic, count in tombstones.items():
        lines.append(f"Write {count} tombstone(s) to {topic} (one transaction), where still live.")
    if group_partitions:
        lines.append(
            f"Delete consumer group {group_id} ({group_partitions} committed partition(s))."
        )
    if strategy == "remove":
        lines.append(f"Delete the connector {connector} on the worker.")
    else:
        lines.append(
            f"No call to the worker besides checking that {connector} does not exist there."
        )
    lines.append("Read everything back: no live key, no committed offset, no connector.")
    return lines
