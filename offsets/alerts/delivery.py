"""Send the queued alert messages that are due, retrying failures with backoff.

    send_due()              # what is due now (send_alerts, the refresh loop)
    send_in_background()    # the same on a thread of its own, after a refresh

Each delivery is claimed by a conditional update of its next attempt (checked row count), so
two senders at once never send one message twice. A failed attempt is tried again after
ALERT_RETRY_SECONDS, doubling each time; after ALERT_MAX_ATTEMPTS it stays FAILED with its
last error.
"""

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connections
from django.utils import timezone

from offsets.alerts import channels
from offsets.alerts.messages import Message, describe_failure
from offsets.domain import alerts as rules
from offsets.models import AlertDelivery, AlertRule

logger = logging.getLogger(__name__)

# How long a claimed delivery is left alone by other senders: longer than one attempt can take.
CLAIM_SECONDS = 120
# Deliveries looked at per call; the rest wait for the next call.
BATCH = 100


@dataclass
class Sent:
    sent: int = 0
    failed: int = 0  # attempts that failed (retried later or given up)


def send_due(*, now: datetime | None = None, budget_seconds: float | None = None) -> Sent:
    """Send the PENDING deliveries whose next attempt is due; stop claiming after the budget."""
    now = now or timezone.now()
    started = time.monotonic()
    result = Sent()
    due = AlertDelivery.objects.filter(
        status=AlertDelivery.Status.PENDING, next_attempt_at__lte=now
    ).order_by("next_attempt_at", "pk")[:BATCH]
    for delivery in list(due):
        if budget_seconds is not None and time.monotonic() - started > budget_seconds:
            break
        if not _claim(delivery, now=now):
            continue  # nothing updated: another sender got there first
        if attempt(delivery, now=now):
            result.sent += 1
        else:
            result.failed += 1
    return result


def _claim(delivery: AlertDelivery, *, now: datetime) -> bool:
    return bool(
        AlertDelivery.objects.filter(
            pk=delivery.pk,
            status=AlertDelivery.Status.PENDING,
            next_attempt_at=delivery.next_attempt_at,
        ).update(next_attempt_at=now + timedelta(seconds=CLAIM_SECONDS))
    )


def attempt(delivery: AlertDelivery, *, now: datetime) -> bool:
    """Try one claimed delivery once and record the outcome; return whether it was sent."""
    attempts = delivery.attempts + 1
    rule = AlertRule.objects.filter(pk=delivery.rule_id).first() if delivery.rule_id else None
    if rule is None or not rule.enabled:
        why = (
            "Its rule was deleted before it was sent." if rule is None else "Its rule is disabled."
        )
        _record(delivery, status=AlertDelivery.Status.FAILED, attempts=attempts, error=why)
        return False
    try:
        channels.send(rule.channel, rule.target, Message(**delivery.body))
    except channels.DeliveryFailed as exc:
        error = str(exc)
    except Exception as exc:
        # A bug or an odd answer must cost this delivery only, never the sender's loop.
        logger.exception("Alert delivery %s failed unexpectedly", delivery.pk)
        error = describe_failure(f"{type(exc).__name__}: {exc}")
    else:
        _record(delivery, status=AlertDelivery.Status.SENT, attempts=attempts, sent_at=now)
        return True
    if attempts >= settings.ALERT_MAX_ATTEMPTS:
        logger.warning(
            "Alert delivery %s gave up after %s attempts: %s", delivery.pk, attempts, error
        )
        _record(delivery, status=AlertDelivery.Status.FAILED, attempts=attempts, error=error)
    else:
        delay = rules.retry_delay(attempts, first_seconds=settings.ALERT_RETRY_SECONDS)
        logger.info("Alert delivery %s failed (%s); next try in %s", delivery.pk, error, delay)
        _record(
            delivery,
            status=AlertDelivery.Status.PENDING,
            attempts=attempts,
            error=error,
            next_attempt_at=now + delay,
        )
    return False


def _record(
    delivery: AlertDelivery,
    *,
    status: str,
    attempts: int,
    error: str = "",
    sent_at: datetime | None = None,
    next_attempt_at: datetime | None = None,
) -> None:
    fields = {"status": status, "attempts": attempts, "next_attempt_at": next_attempt_at}
    fields.update(last_error=error, sent_at=sent_at)
    AlertDelivery.objects.filter(pk=delivery.pk).update(**fields)
    for name, value in fields.items():
        setattr(delivery, name, value)


_background: threading.Thread | None = None
_background_lock = threading.Lock()


def send_in_background(*, budget_seconds: float = 60) -> threading.Thread | None:
    """Send what is due on a thread of its own; None if nothing waits or this process's sender
    still runs.

    Not a daemon: a one-off `refresh_offsets` ends once its messages are out (each attempt
    is bounded by its timeout, the batch by `budget_seconds`), while the refresh itself is
    already recorded and never waits for them.
    """
    global _background
    if not AlertDelivery.objects.filter(status=AlertDelivery.Status.PENDING).exists():
        return None  # the usual case: no thread for nothing
    with _background_lock:
        if _background is not None and _background.is_alive():
            return None

        def run() -> None:
            try:
                send_due(budget_seconds=budget_seconds)
            except Exception:
                logger.exception("Sending the alerts failed; the next round tries again")
            finally:
                connections.close_all()  # this thread's own connections

        _background = threading.Thread(target=run, name="send-alerts")
        _background.start()
        return _background
