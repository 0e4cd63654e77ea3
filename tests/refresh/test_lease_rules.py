"""A refresh's claim as a lease: while it holds, and when another claim may take it over."""

from datetime import UTC, datetime, timedelta

from offsets import tuning
from offsets.domain.leases import TakeOver, lease_expiry, lease_holds, take_over

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def test_a_lease_runs_out_its_length_after_its_renewal():
    assert lease_expiry(NOW, seconds=20) == at(20)


def test_a_lease_holds_until_the_moment_it_runs_out():
    assert lease_holds(at(0.001), now=NOW)
    assert not lease_holds(NOW, now=NOW)
    assert not lease_holds(at(-5), now=NOW)


def test_a_claim_without_a_lease_holds_nothing():
    assert not lease_holds(None, now=NOW)
    assert take_over(None, now=NOW, process_gone=False) is TakeOver.LEASE_EXPIRED


def test_a_live_lease_is_never_taken_over_while_its_process_may_live():
    # Its process runs elsewhere (another machine or container) and cannot be asked.
    assert take_over(at(1), now=NOW, process_gone=False) is None


def test_a_claim_whose_process_is_known_to_be_gone_is_taken_over_before_its_lease_runs_out():
    assert take_over(at(15), now=NOW, process_gone=True) is TakeOver.PROCESS_GONE


def test_a_claim_whose_lease_ran_out_is_taken_over_wherever_its_process_ran():
    assert take_over(at(-0.5), now=NOW, process_gone=False) is TakeOver.LEASE_EXPIRED
    assert take_over(at(-0.5), now=NOW, process_gone=True) is TakeOver.LEASE_EXPIRED


def test_a_killed_holder_is_taken_over_within_the_lease_and_a_live_one_never():
    """Renewed every REFRESH_LEASE_RENEW_SECONDS, a live holder's lease never runs out, with
    room for missed renewals; a killed one's runs out a lease after its last renewal, and the
    next scheduler round (a second) takes it over: within the 30 s promised."""
    lease, renew = tuning.REFRESH_LEASE_SECONDS, tuning.REFRESH_LEASE_RENEW_SECONDS
    assert lease >= 3 * renew  # two renewals may fail (a busy database) without losing it
    last_renewal = NOW
    for second in range(0, 600):
        now = at(second)
        if second % renew == 0:
            last_renewal = now
        assert (
            take_over(lease_expiry(last_renewal, seconds=lease), now=now, process_gone=False)
            is None
        )
    killed = at(600)  # right after a renewal: the longest wait
    taken = next(
        second
        for second in range(0, 60)
        if take_over(lease_expiry(killed, seconds=lease), now=at(600 + second), process_gone=False)
    )
    assert taken == lease and taken + 1 <= 30
