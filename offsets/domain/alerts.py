"""The rules of alerts: which conditions hold, and when a rule sends a message (no I/O).

A rule watches subjects (one condition of one connector, or of the cluster): it sends one
FIRING message when a condition starts to hold and one RESOLVED message when it stops, and
nothing while it stays. After a message about a subject, no further FIRING message about it
goes out within the rule's quiet period; a condition that starts again meanwhile is recorded
as firing but announced only once the quiet period is over, if it still holds, and a recovery
is announced only for a firing that was.
"""

import fnmatch
import logging
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

import regex

logger = logging.getLogger(__name__)

# A rule's connector pattern is an admin's, but it is matched against names anyone with
# Connect access chooses: matching it may take at most this long per evaluation of a rule, so
# that a pattern that backtracks without end cannot hold an evaluation.
PATTERN_SECONDS = 0.2


class Condition(StrEnum):
    LAG = "lag"  # a connector's lag status is not OK (WARN/ERR, or a partition STALL/STOP/REWIND)
    FAILED = "failed"  # the connector or one of its tasks is FAILED
    NO_COMMIT = "no-commit"  # a running source committed nothing for N flush intervals
    REFRESH_FAILING = "refresh-failing"  # the cluster's last finished refresh failed
    KEY_DRIFT = "key-drift"  # a source partition stored under more than one key form
    EDIT_PENDING = "edit-pending"  # an offset edit waits for approval longer than N hours


class Kind(StrEnum):
    FIRING = "firing"
    RESOLVED = "resolved"


class PatternSyntax(StrEnum):
    GLOB = "glob"
    REGEX = "regex"


LAG_STATUSES = ("WARN", "ERR", "STALL", "STOP", "REWIND")


@dataclass(frozen=True)
class Fact:
    """One condition that holds now for one subject, with what a message says about it."""

    cluster: str
    connector: str  # "" for a condition of the whole cluster
    condition: Condition
    summary: str
    details: dict
    # Several subjects of one connector and condition (one per pending edit) need their own key.
    discriminator: str = ""

    @property
    def subject(self) -> str:
        return subject_key(self.cluster, self.connector, self.condition, self.discriminator)


def subject_key(cluster: str, connector: str, condition: str, discriminator: str = "") -> str:
    """Return the key that identifies a subject across evaluations."""
    tail = f"#{discriminator}" if discriminator else ""
    return f"{cluster}/{connector}/{condition}{tail}"


@dataclass(frozen=True)
class SubjectState:
    """What was last decided about a subject (AlertState without the database)."""

    firing: bool
    notified: bool  # the current firing was announced (so its recovery is, too)
    since: datetime | None
    last_sent_at: datetime | None


@dataclass(frozen=True)
class Decision:
    """The new state of a subject, and the message to send if any (None: stay silent)."""

    subject: str
    state: SubjectState
    send: Kind | None
    fact: Fact | None  # the condition's fact when it holds


def decide(
    subject: str,
    fact: Fact | None,
    stored: SubjectState | None,
    *,
    now: datetime,
    quiet: timedelta,
) -> Decision | None:
    """Decide one subject: `fact` is the condition holding now (None: it does not hold).

    Returns None when nothing changes.
    """
    state = stored or SubjectState(firing=False, notified=False, since=None, last_sent_at=None)
    quiet_over = state.last_sent_at is None or now - state.last_sent_at >= quiet
    if fact is not None and not state.firing:
        if quiet_over:
            new = SubjectState(True, True, now, now)
            return Decision(subject, new, Kind.FIRING, fact)
        return Decision(subject, replace(state, firing=True, notified=False, since=now), None, fact)
    if fact is not None and not state.notified and quiet_over:
        # It started again within the quiet period and still holds once the period is over.
        return Decision(subject, replace(state, notified=True, last_sent_at=now), Kind.FIRING, fact)
    if fact is None and state.firing:
        if state.notified:
            new = SubjectState(False, False, state.since, now)
            return Decision(subject, new, Kind.RESOLVED, None)
        return Decision(subject, replace(state, firing=False), None, None)
    return None


def decide_all(
    facts: list[Fact],
    stored: dict[str, SubjectState],
    *,
    now: datetime,
    quiet: timedelta,
) -> list[Decision]:
    """Decide every subject that holds now or was firing; a subject gone (a deleted connector)
    counts as recovered."""
    by_subject = {fact.subject: fact for fact in facts}
    decisions = []
    for subject in sorted(by_subject.keys() | stored.keys()):
        decision = decide(
            subject, by_subject.get(subject), stored.get(subject), now=now, quiet=quiet
        )
        if decision is not None:
            decisions.append(decision)
    return decisions


# --- Connector name patterns ---------------------------------------------------------------


class BadPattern(ValueError):
    """A connector pattern that does not compile; the message says why."""


def compile_pattern(pattern: str, syntax: str) -> regex.Pattern | None:
    """Compile a rule's connector pattern (None: every connector); raise BadPattern."""
    if not pattern:
        return None
    source = fnmatch.translate(pattern) if syntax == PatternSyntax.GLOB else pattern
    try:
        return regex.compile(source)
    except (regex.error, ValueError, OverflowError) as exc:
        raise BadPattern(f"The pattern {pattern!r} is not a valid {syntax}: {exc}") from None


class NameMatcher:
    """Matches connector names against one pattern (whole names), within PATTERN_SECONDS in all.

    A name left unmatched because the time ran out does not match; it is logged once.
    """

    def __init__(self, compiled: regex.Pattern | None, *, rule: str = ""):
        self.compiled, self.rule = compiled, rule
        self.deadline = time.monotonic() + PATTERN_SECONDS
        self.timed_out = False

    def __call__(self, name: str) -> bool:
        if self.compiled is None:
            return True
        left = self.deadline - time.monotonic()
        if left > 0:
            try:
                return self.compiled.fullmatch(name, timeout=left) is not None
            except TimeoutError:
                pass
        if not self.timed_out:
            self.timed_out = True
            logger.warning(
                "Alert rule %r: its connector pattern took over %.1f s; names not yet matched "
                "are left out",
                self.rule,
                PATTERN_SECONDS,
            )
        return False


# --- Conditions from plain values ----------------------------------------------------------


def lag_problem(
    connector_status: str, partition_statuses: dict[str, int], watched: set[str]
) -> str | None:
    """Return what is wrong with a connector's lag among the `watched` statuses, or None."""
    problems = []
    if connector_status in watched:
        problems.append(f"lag status {connector_status}")
    for status in LAG_STATUSES:
        count = partition_statuses.get(status, 0)
        if status in watched and count and status not in ("WARN", "ERR"):
            problems.append(f"{count} partition{'s' * (count != 1)} {status}")
    return ", ".join(problems) or None


def failed_parts(runtime_state: str, task_states: dict[str, str]) -> list[str]:
    """Return what is FAILED of a connector: "connector" and "task N"."""
    parts = ["connector"] if runtime_state == "FAILED" else []
    parts += [f"task {task}" for task, state in sorted(task_states.items()) if state == "FAILED"]
    return parts


def no_commit_for(
    *,
    last_commit_at: datetime | None,
    seen_at: datetime,
    flush_interval_ms: int,
    intervals: int,
) -> timedelta | None:
    """Return how long a running source has gone without a commit, when over `intervals` flush
    intervals as of `seen_at` (the refresh that saw it); None otherwise.

    Judged as of the refresh, not now: between refreshes nothing new is known, and a commit
    made since would otherwise look missing.
    """
    if last_commit_at is None:
        return None
    quiet = seen_at - last_commit_at
    return quiet if quiet > timedelta(milliseconds=flush_interval_ms * intervals) else None


def edit_waiting(*, submitted_at: datetime | None, now: datetime, hours: float) -> timedelta | None:
    """Return how long a submitted edit has waited for approval, when over `hours`."""
    if submitted_at is None:
        return None
    waited = now - submitted_at
    return waited if waited > timedelta(hours=hours) else None


# --- Retries -------------------------------------------------------------------------------


def retry_delay(attempts: int, *, first_seconds: float) -> timedelta:
    """Return the wait after the `attempts`-th failed attempt: first_seconds, then doubling."""
    return timedelta(seconds=first_seconds * 2 ** max(0, attempts - 1))
