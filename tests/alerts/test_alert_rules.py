"""The pure rules of alerts: transitions, quiet period, patterns, conditions, retries, bodies."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from offsets.alerts import messages as alert_messages
from offsets.domain import alerts as alert_rules
from offsets.domain.alerts import Condition, Fact, Kind, SubjectState, decide, decide_all

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
QUIET = timedelta(minutes=30)


def fact(connector: str = "orders", condition: Condition = Condition.FAILED) -> Fact:
    return Fact("prod", connector, condition, "FAILED: task 0", {"failed": ["task 0"]})


def run(holds: list[bool], *, minutes_apart: float = 60, quiet: timedelta = QUIET) -> list:
    """Decide one subject over several evaluations; return what each one sends."""
    state, sent = None, []
    for index, on in enumerate(holds):
        now = T0 + timedelta(minutes=minutes_apart * index)
        decision = decide("s", fact() if on else None, state, now=now, quiet=quiet)
        if decision is not None:
            state = decision.state
        sent.append(decision.send if decision else None)
    return sent


def test_it_fires_once_when_a_condition_starts_and_stays():
    assert run([True, True, True]) == [Kind.FIRING, None, None]


def test_it_sends_one_recovery_and_nothing_while_it_stays_fine():
    assert run([True, False, False]) == [Kind.FIRING, Kind.RESOLVED, None]


def test_nothing_is_sent_for_a_subject_that_never_fired():
    assert run([False, False]) == [None, None]


def test_each_new_transition_after_the_quiet_period_is_sent():
    assert run([True, False, True, False]) == [Kind.FIRING, Kind.RESOLVED] * 2


def test_a_flap_within_the_quiet_period_is_held_back_then_sent_if_it_still_holds():
    # Ten minutes apart with a 30-minute quiet period: fires, recovers, fires again (held),
    # holds at 30 and 40 minutes: announced at 40, 30 minutes after the recovery message.
    assert run([True, False, True, True, True], minutes_apart=10) == [
        Kind.FIRING,
        Kind.RESOLVED,
        None,
        None,
        Kind.FIRING,
    ]


def test_a_held_back_firing_that_recovers_sends_no_recovery():
    assert run([True, False, True, False, False], minutes_apart=5) == [
        Kind.FIRING,
        Kind.RESOLVED,
        None,
        None,
        None,
    ]


def test_the_recovery_is_sent_even_within_the_quiet_period():
    assert run([True, False], minutes_apart=1) == [Kind.FIRING, Kind.RESOLVED]


def test_decide_all_resolves_a_subject_that_is_gone():
    firing = SubjectState(firing=True, notified=True, since=T0, last_sent_at=T0)
    decisions = decide_all([], {"prod/gone/failed": firing}, now=T0 + QUIET, quiet=QUIET)
    assert [(d.subject, d.send) for d in decisions] == [("prod/gone/failed", Kind.RESOLVED)]


def test_decide_all_keeps_subjects_apart():
    facts = [fact("a"), fact("b"), fact("a", Condition.LAG)]
    decisions = decide_all(facts, {}, now=T0, quiet=QUIET)
    assert [d.subject for d in decisions] == ["prod/a/failed", "prod/a/lag", "prod/b/failed"]
    assert {d.send for d in decisions} == {Kind.FIRING}


def test_subject_keys_tell_pending_edits_apart():
    one = Fact("prod", "c", Condition.EDIT_PENDING, "", {}, discriminator="7")
    assert one.subject == "prod/c/edit-pending#7"


@pytest.mark.parametrize(
    ("pattern", "syntax", "name", "matches"),
    [
        ("orders-*", "glob", "orders-cdc", True),
        ("orders-*", "glob", "my-orders-cdc", False),
        ("orders-.*", "regex", "orders-cdc", True),
        ("orders", "regex", "orders-cdc", False),  # whole names only
        ("", "glob", "anything", True),
        ("a[bc]d", "glob", "acd", True),
    ],
)
def test_patterns_match_whole_names(pattern, syntax, name, matches):
    matcher = alert_rules.NameMatcher(alert_rules.compile_pattern(pattern, syntax))
    assert matcher(name) is matches


def test_a_bad_pattern_says_why():
    with pytest.raises(alert_rules.BadPattern, match=r"'orders-\(' is not a valid regex"):
        alert_rules.compile_pattern("orders-(", "regex")


def test_a_pattern_that_backtracks_without_end_gives_up_in_time():
    matcher = alert_rules.NameMatcher(alert_rules.compile_pattern("(a|aa)+$", "regex"))
    started = datetime.now()
    assert matcher("a" * 40 + "!") is False  # exponential: minutes without the limit
    assert datetime.now() - started < timedelta(seconds=2)
    assert matcher.timed_out


def test_lag_problem_names_the_watched_statuses_only():
    watched = {"ERR", "STALL"}
    assert alert_rules.lag_problem("ERR", {"STALL": 2, "OK": 3}, watched) == (
        "lag status ERR, 2 partitions STALL"
    )
    assert alert_rules.lag_problem("WARN", {"REWIND": 1}, watched) is None
    assert alert_rules.lag_problem("OK", {"STALL": 1}, watched) == "1 partition STALL"


def test_failed_parts_name_the_connector_and_tasks():
    assert alert_rules.failed_parts("FAILED", {"1": "FAILED", "0": "RUNNING"}) == [
        "connector",
        "task 1",
    ]
    assert alert_rules.failed_parts("RUNNING", {"0": "RUNNING"}) == []


def test_no_commit_is_judged_as_of_the_refresh_that_saw_it():
    seen = T0
    args = {"seen_at": seen, "flush_interval_ms": 60_000, "intervals": 5}
    assert alert_rules.no_commit_for(last_commit_at=seen - timedelta(minutes=4), **args) is None
    assert alert_rules.no_commit_for(
        last_commit_at=seen - timedelta(minutes=6), **args
    ) == timedelta(minutes=6)
    assert alert_rules.no_commit_for(last_commit_at=None, **args) is None


def test_edit_waiting_counts_from_submission():
    assert alert_rules.edit_waiting(submitted_at=T0, now=T0 + timedelta(hours=3), hours=4) is None
    assert alert_rules.edit_waiting(
        submitted_at=T0, now=T0 + timedelta(hours=5), hours=4
    ) == timedelta(hours=5)
    assert alert_rules.edit_waiting(submitted_at=None, now=T0, hours=0) is None


def test_retries_back_off_doubling():
    delays = [alert_rules.retry_delay(n, first_seconds=30).total_seconds() for n in range(1, 6)]
    assert delays == [30, 60, 120, 240, 480]


MESSAGE = alert_messages.Message(
    rule="ops",
    cluster="prod",
    connector='<!channel> "orders"\n&co',
    condition="failed",
    state="firing",
    summary="FAILED: task 0",
    details={"failed": ["task 0"]},
    url="",
    at=T0.isoformat(),
)


def test_the_json_body_carries_names_as_data():
    body = json.loads(alert_messages.json_body(MESSAGE))
    assert body["connector"] == '<!channel> "orders"\n&co'
    assert body["state"] == "firing" and body["rule"] == "ops" and body["details"]


def test_the_slack_body_escapes_what_slack_reads_as_markup():
    text = json.loads(alert_messages.slack_body(MESSAGE))["text"]
    assert "<!channel>" not in text
    assert "&lt;!channel&gt;" in text and "&amp;co" in text


def test_an_email_subject_is_one_line():
    subject = alert_messages.email_subject(MESSAGE)
    assert "\n" not in subject and subject.startswith("[FIRING] prod/")


def test_failures_are_masked():
    assert "hunter2" not in alert_messages.describe_failure("refused: password=hunter2")
