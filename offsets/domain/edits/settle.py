"""Settling an edit found in "applying": a crash or an outage between the claim and the record."""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Settled:
    """What reading the topic back says about an edit.

    ``outcome`` is "applied", "not-applied", "mixed" (something else wrote) or, for a sink
    edit that deletes some of a group's partitions, "incomplete": the group was deleted but
    the partitions it had to keep are not all back; ``restore`` holds those offsets.
    """

    outcome: str
    message: str
    restore: Mapping[tuple[str, int], int] = field(default_factory=dict)


def settle(observed: Sequence[tuple[str, object, object, object]]) -> Settled:
    """Decide from (label, before, after, current) of every touched partition.

    All at their after value: the write committed. All at their before value: it did not.
    Anything else: someone else moved them, which one transaction alone cannot explain.
    """
    if not observed:
        return Settled("not-applied", "The edit touches no partition.")
    at_after = [label for label, _before, after, current in observed if current == after]
    at_before = [label for label, before, _after, current in observed if current == before]
    if len(at_after) == len(observed):
        return Settled("applied", f"All {len(observed)} partition(s) hold their new value.")
    if len(at_before) == len(observed):
        return Settled(
            "not-applied", f"All {len(observed)} partition(s) still hold their old value."
        )
    others = [
        label
        for label, before, after, current in observed
        if current != after and current != before
    ]
    return Settled(
        "mixed",
        f"{len(at_after)} partition(s) hold the new value, {len(at_before)} the old one and "
        f"{len(others)} another value ({', '.join(others[:5])}): something else wrote to them.",
    )


def settle_sink_group(
    observed: Sequence[tuple[str, object, object, object]],
    *,
    deleted: Iterable[tuple[str, int]],
    keep: Mapping[tuple[str, int], int],
    group: Mapping[tuple[str, int], int],
) -> Settled:
    """Decide a partial sink delete from the WHOLE group, not only the edit's partitions.

    Such an edit deletes the group (Kafka cannot delete one partition's committed offset of
    a group) and commits ``keep`` back: the other partitions and the edit's new values. The
    edit's own partitions alone would call it "applied" as soon as the deleted ones are gone,
    even if the other partitions were never committed back. So: "applied" only when the
    edit's partitions hold their new values AND every kept partition holds its offset;
    "incomplete" (never applied) when the delete happened (every ``deleted`` partition is
    gone) but a kept partition is missing or different, with ``restore`` naming exactly
    those offsets; otherwise what ``settle`` says about the edit's partitions (the group was
    not deleted: "not-applied", or "mixed" when something else wrote).
    """
    own = settle(observed)
    missing = {tp: offset for tp, offset in keep.items() if group.get(tp) != offset}
    if own.outcome == "applied" and not missing:
        return Settled("applied", f"{own.message} Every kept partition ({len(keep)}) is back.")
    delete_happened = all(tp not in group for tp in deleted)
    if delete_happened and missing:
        absent = sum(1 for tp in missing if tp not in group)
        return Settled(
            "incomplete",
            f"The group was deleted but {len(missing)} of the {len(keep)} partition(s) it had "
            f"to keep are not back ({absent} missing, {len(missing) - absent} at another "
            f"offset). Commit these offsets to restore them: {restore_text(missing)}",
            restore=missing,
        )
    return own


def restore_text(restore: Mapping[tuple[str, int], int]) -> str:
    """Return offsets to restore as "topic-partition=offset, ...", sorted."""
    return ", ".join(f"{t}-{p}={o}" for (t, p), o in sorted(restore.items()))


def restore_details(restore: Mapping[tuple[str, int], int]) -> dict[str, int]:
    """Return offsets to restore for the audit log: {"topic-partition": offset}, sorted."""
    return {f"{t}-{p}": o for (t, p), o in sorted(restore.items())}


def keep_as_json(keep: Mapping[tuple[str, int], int]) -> list[list[str | int]]:
    """Return a group's offsets as [[topic, partition, offset], ...] for a JSON field.

    A list of triples, not "topic-partition" keys: topic names may contain '-'.
    """
    return [[topic, partition, offset] for (topic, partition), offset in sorted(keep.items())]


def keep_from_json(stored: Iterable[list]) -> dict[tuple[str, int], int]:
    """Read back what ``keep_as_json`` stored."""
    return {(str(topic), int(partition)): int(offset) for topic, partition, offset in stored}
