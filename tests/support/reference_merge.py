"""A record-by-record reference model of the refresh's results, to check the fold and merge.

The refresh folds records per read task (offsets.spark.partials) and merges the folds with the
previous state (offsets.spark.merge). Here the same results come from every record at once,
one rule after the other, in plain Python that is easy to check by eye: the tests compare
both on the same records.
"""

import hashlib
import itertools
import json
from collections import Counter, defaultdict

from offsets.domain.history import offset_progress
from offsets.formats.offset_records import (
    MalformedReason,
    MalformedRecord,
    parse_offset_record,
    refresh_key_reason,
    refresh_value_reason,
    timestamp_in_range,
)
from offsets.spark import partials as P
from offsets.spark.schemas import STATE_COLUMNS


def parse(topic, kafka_partition, kafka_offset, timestamp_ms, key, value) -> dict:
    """One record parsed with the runtime's rules; malformed ones keep a reason and an example.

    The same order of checks as the fold: the key, the timestamp, the value.
    """
    row = {
        "topic": topic,
        "kafka_partition": kafka_partition,
        "kafka_offset": kafka_offset,
        "timestamp_ms": timestamp_ms,
        "key": key,
        "connector": None,
        "reason": None,
    }
    keyed = parse_offset_record(key, None)
    if not isinstance(keyed, MalformedRecord):
        keyed = refresh_key_reason(keyed.connector, keyed.partition) or keyed
    if isinstance(keyed, MalformedRecord):
        return row | {"reason": keyed.reason.value, "example": P.example(key, value)}
    row["connector"] = keyed.connector
    if not timestamp_in_range(timestamp_ms):
        reason = MalformedReason.TIMESTAMP_OUT_OF_RANGE.value
        return row | {"reason": reason, "example": P.example(key, value)}
    record = parse_offset_record(key, value)
    if not isinstance(record, MalformedRecord) and record.offset is not None:
        record = refresh_value_reason(record.offset, value) or record
    if isinstance(record, MalformedRecord):
        return row | {"reason": record.reason.value, "example": P.example(key, value)}
    return row | {
        "key_hash": hashlib.sha1(key).hexdigest(),
        "partition_json": json.dumps(record.partition, ensure_ascii=False, separators=(",", ":")),
        "identity": record.partition_identity,
        "offset_json": None if value is None else value.decode("utf-8"),
        "tombstone": value is None,
        "progress": offset_progress(record.offset),
    }


def latest_by_key(valid: list[dict]) -> list[dict]:
    """The last write per (topic, key bytes), with its commit totals (STATE_COLUMNS)."""
    by_key = defaultdict(list)
    for row in valid:
        by_key[(row["topic"], row["key_hash"])].append(row)
    states = []
    for writes in by_key.values():
        last = max(writes, key=lambda row: row["kafka_offset"])
        commits = [row["timestamp_ms"] for row in writes if not row["tombstone"]]
        state = {name: last.get(name) for name in STATE_COLUMNS}
        state["commits"] = len(commits)
        state["first_commit_ms"] = min(commits, default=None)
        state["last_commit_ms"] = max(commits, default=None)
        states.append(state)
    return states


def effective(latest: list[dict], own_topics: dict[str, str], worker_topic: str) -> None:
    """Mark the live value the runtime reads for each (connector, key): its own topic's, else
    the worker topic's."""
    for state in latest:
        state["effective"] = False
    by_key = defaultdict(list)
    for state in latest:
        if state["offset_json"] is not None:
            by_key[(state["connector"], state["key_hash"])].append(state)
    for (connector, _), states in by_key.items():
        for topic in (own_topics.get(connector), worker_topic):
            found = [state for state in states if state["topic"] == topic]
            if found:
                found[0]["effective"] = True
                break


def stalls(latest: list[dict], running: set[str], now_ms: int, threshold_ms: int) -> None:
    for state in latest:
        state["stalled"] = False
        if state["effective"] and state["connector"] in running:
            last = state["last_commit_ms"]
            state["stalled"] = None if last is None else now_ms - last > threshold_ms


def drift(latest: list[dict]) -> list[dict]:
    forms = defaultdict(list)
    for state in latest:
        if state["effective"]:
            form = {
                "last_commit_ms": state["last_commit_ms"],
                "topic": state["topic"],
                "key_hash": state["key_hash"],
                "key_text": bytes(state["key"]).decode("utf-8", "replace"),
                "offset_json": state["offset_json"],
            }
            forms[(state["connector"], state["identity"])].append(form)

    def newest_first(form):
        return [(value is not None, "" if value is None else value) for value in form.values()]

    return [
        {
            "connector": connector,
            "identity": identity,
            "forms_count": len(found),
            "forms": sorted(found, key=newest_first, reverse=True),
        }
        for (connector, identity), found in forms.items()
        if len(found) > 1
    ]


def rewinds(valid: list[dict], earlier: list[dict] = ()) -> list[dict]:
    """Commits whose progress is lower than the write before them (a tombstone resets),
    those of `valid` only, with `earlier` records of the same keys before them."""
    new = {id(row) for row in valid}
    by_key = defaultdict(list)
    for row in [*earlier, *valid]:
        by_key[(row["topic"], row["key_hash"])].append(row)
    found = []
    for writes in by_key.values():
        writes.sort(key=lambda row: row["kafka_offset"])
        for before, row in itertools.pairwise(writes):
            if id(row) not in new or row["tombstone"] or before["tombstone"]:
                continue
            if None not in (row["progress"], before["progress"]) and (
                row["progress"] < before["progress"]
            ):
                found.append(
                    {name: row[name] for name in ("connector", "topic", "key_hash")}
                    | {name: row[name] for name in ("partition_json", "kafka_partition")}
                    | {"kafka_offset": row["kafka_offset"], "timestamp_ms": row["timestamp_ms"]}
                    | {"from_progress": before["progress"], "to_progress": row["progress"]}
                )
    return found


def commits(valid: list[dict]) -> list[dict]:
    """Every offset commit (non-tombstone write): the history kept beyond compaction."""
    return [{name: row[name] for name in P.COMMIT_COLUMNS} for row in valid if not row["tombstone"]]


def unstorable(parsed: list[dict]) -> list[dict]:
    """Keys whose last kept or unstorable record of this read is one the database cannot
    hold: a kept write or a tombstone after it clears it, other malformed records do not."""
    last: dict[tuple[str, bytes], int | None] = {}
    for row in parsed:
        slot = (row["topic"], row["key"])
        if row["reason"] == MalformedReason.VALUE_UNSTORABLE.value:
            last[slot] = row["kafka_offset"]
        elif row["reason"] is None:
            last[slot] = None
    return [
        {"topic": topic, "key_hash": hashlib.sha1(key).hexdigest(), "kafka_offset": offset}
        for (topic, key), offset in last.items()
        if offset is not None
    ]


def results(
    records: list[tuple],
    earlier: list[tuple] = (),
    *,
    own_topics: dict[str, str],
    running: set[str],
    worker_topic: str,
    now_ms: int,
    threshold_ms: int,
    bucket_seconds: int = 300,
) -> dict[str, list[dict]]:
    """The merge's results (schemas.RESULT_STRUCTS, examples left out) for `records`
    (topic, kafka_partition, kafka_offset, timestamp_ms, key, value) read after `earlier`."""
    old = [row for row in (parse(*record) for record in earlier) if row["reason"] is None]
    parsed = [parse(*record) for record in records]
    valid = [row for row in parsed if row["reason"] is None]
    latest = latest_by_key(old + valid)
    effective(latest, own_topics, worker_topic)
    stalls(latest, running, now_ms, threshold_ms)
    bucket_ms = bucket_seconds * 1000
    buckets = Counter(
        (row["connector"], row["timestamp_ms"] // bucket_ms * bucket_ms) for row in commits(valid)
    )
    malformed = Counter(
        (row["topic"], row["connector"], row["reason"]) for row in parsed if row["reason"]
    )
    return {
        "unstorable": unstorable(parsed),
        "latest": latest,
        "drift": drift(latest),
        "records": [{"topic": t, "count": n} for t, n in Counter(r[0] for r in records).items()],
        "rewinds": rewinds(valid, old),
        "buckets": [
            {"connector": connector, "bucket_start_ms": start, "commits": count}
            for (connector, start), count in buckets.items()
        ],
        "malformed": [
            {"topic": topic, "connector": connector, "reason": reason, "count": count}
            for (topic, connector, reason), count in malformed.items()
        ],
    }
