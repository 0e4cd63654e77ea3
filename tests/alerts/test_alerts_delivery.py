"""Alert deliveries to real receivers started by the test on loopback: an HTTP server (one that
answers 500 first, one that hangs, none at all) and an SMTP server (aiosmtpd)."""

import socket
from datetime import timedelta
from email import message_from_bytes

import pytest
from aiosmtpd.controller import Controller
from django.core.management import call_command
from django.utils import timezone

from offsets.alerts import delivery as alert_delivery
from offsets.alerts import evaluation as alerts
from offsets.models import AlertDelivery, AlertRule
from tests.support import factories
from tests.support.alert_receivers import Receiver

pytestmark = pytest.mark.django_db


@pytest.fixture
def receiver():
    started = []

    def start(*args, **kwargs) -> Receiver:
        started.append(Receiver(*args, **kwargs))
        return started[-1]

    yield start
    for each in started:
        each.close()


class Mailbox:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], bytes]] = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append((envelope.rcpt_tos, envelope.content))
        return "250 Message accepted for delivery"


@pytest.fixture
def smtp_server(settings):
    """A real SMTP server on loopback (aiosmtpd), Django's SMTP mailer pointed at it."""
    mailbox = Mailbox()
    with socket.socket() as probe:  # a free port: the controller checks its own start on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": port, "timeout": 5},
        }
    }
    yield mailbox
    controller.stop()


@pytest.fixture(autouse=True)
def _alert_settings(settings):
    settings.ALERT_WEBHOOK_TIMEOUT = 1
    settings.ALERT_RETRY_SECONDS = 30
    settings.ALERT_MAX_ATTEMPTS = 3
    settings.ALERT_DASHBOARD_URL = "https://dash.example.com"


def failing_connector(name: str = 'orders "<b>"'):
    cluster = factories.cluster()
    return factories.snapshot(cluster, name, task_states={"0": "FAILED"})


def make_rule(channel: str, target: str) -> AlertRule:
    rule = AlertRule(name="ops", channel=channel, target=target, on_lag=False, quiet_minutes=0)
    rule.full_clean()
    rule.save()
    return rule


def test_a_webhook_gets_the_json_body_once_per_transition(receiver):
    hook = receiver()
    snapshot = failing_connector()
    make_rule("webhook", hook.url)
    now = timezone.now()
    for minute in range(3):
        alerts.evaluate(now=now + timedelta(minutes=minute))
        alert_delivery.send_due(now=now + timedelta(minutes=minute))
    type(snapshot).objects.filter(pk=snapshot.pk).update(task_states={"0": "RUNNING"})
    alerts.evaluate(now=now + timedelta(minutes=4))
    assert alert_delivery.send_due(now=now + timedelta(minutes=4)).sent == 1
    assert [body["state"] for body in hook.bodies] == ["firing", "resolved"]
    firing = hook.bodies[0]
    assert firing["connector"] == 'orders "<b>"' and firing["cluster"] == "prod"
    assert firing["condition"] == "failed" and firing["rule"] == "ops"
    assert (
        firing["url"] == "https://dash.example.com/clusters/prod/connectors/orders%20%22%3Cb%3E%22/"
    )
    assert set(AlertDelivery.objects.values_list("status", flat=True)) == {"sent"}


def test_a_slack_compatible_webhook_gets_text_with_names_escaped(receiver):
    hook = receiver()
    failing_connector("<!channel>")
    make_rule("slack", hook.url)
    alerts.evaluate()
    alert_delivery.send_due()
    (body,) = hook.bodies
    assert list(body) == ["text"]
    assert "&lt;!channel&gt;" in body["text"] and "<!channel>" not in body["text"]


def test_a_webhook_answering_500_is_retried_with_backoff_then_sent(receiver):
    hook = receiver([500, 500])
    failing_connector()
    make_rule("webhook", hook.url)
    now = timezone.now()
    alerts.evaluate(now=now)
    alert_delivery.send_due(now=now)
    delivery = AlertDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("pending", 1)
    assert delivery.last_error == (
        "The webhook at 127.0.0.1 answered HTTP 500 Internal Server Error: internal trouble"
    )
    assert delivery.next_attempt_at == now + timedelta(seconds=30)
    assert alert_delivery.send_due(now=now + timedelta(seconds=29)).failed == 0  # not yet due
    alert_delivery.send_due(now=now + timedelta(seconds=30))
    delivery.refresh_from_db()
    assert delivery.attempts == 2 and delivery.next_attempt_at == now + timedelta(seconds=90)
    alert_delivery.send_due(now=now + timedelta(seconds=90))
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("sent", 3, "")
    assert len(hook.bodies) == 3 and delivery.sent_at == now + timedelta(seconds=90)


def test_a_webhook_that_hangs_fails_within_the_timeout_and_stays_failed_after_the_last_try(
    receiver,
):
    hook = receiver(hang_seconds=10)
    failing_connector()
    make_rule("webhook", hook.url)
    now = timezone.now()
    alerts.evaluate(now=now)
    # The receiver would answer 200 after 10 s: a send without the timeout would succeed.
    for seconds in (0, 30, 90):
        alert_delivery.send_due(now=now + timedelta(seconds=seconds))
    delivery = AlertDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("failed", 3)
    assert delivery.last_error == (
        "The webhook at 127.0.0.1 did not answer within 1 s (ALERT_WEBHOOK_TIMEOUT)."
    )
    assert alert_delivery.send_due(now=now + timedelta(days=1)).failed == 0  # given up


def test_a_receiver_that_is_down_is_retried_and_reached_once_it_is_up(receiver):
    hook = receiver()
    url = hook.url
    hook.close()  # nothing listens on its port now
    failing_connector()
    make_rule("webhook", url)
    now = timezone.now()
    alerts.evaluate(now=now)
    alert_delivery.send_due(now=now)
    delivery = AlertDelivery.objects.get()
    assert delivery.status == "pending"
    assert (
        delivery.last_error
        == "The webhook at 127.0.0.1 could not be reached: [Errno 111] Connection refused"
    )
    up = receiver(port=int(url.split(":")[2].split("/")[0]))
    alert_delivery.send_due(now=now + timedelta(seconds=30))
    delivery.refresh_from_db()
    assert delivery.status == "sent" and [b["state"] for b in up.bodies] == ["firing"]


def test_an_email_goes_through_a_real_smtp_server(smtp_server):
    failing_connector("orders\nBcc: victim@example.com")
    make_rule("email", "ops@example.com, oncall@example.com")
    alerts.evaluate()
    assert alert_delivery.send_due().sent == 1
    ((recipients, content),) = smtp_server.messages
    assert recipients == ["ops@example.com", "oncall@example.com"]
    mail = message_from_bytes(content)
    assert mail["Subject"] == "[FIRING] prod/orders Bcc: victim@example.com: FAILED: task 0"
    assert mail["Bcc"] is None
    assert "Condition: failed" in mail.get_payload(decode=True).decode()


def test_a_mail_server_that_is_down_gives_a_clear_error(settings):
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": 9, "timeout": 1},
        }
    }
    failing_connector()
    make_rule("email", "ops@example.com")
    alerts.evaluate()
    alert_delivery.send_due()
    delivery = AlertDelivery.objects.get()
    assert delivery.status == "pending"
    assert delivery.last_error == (
        "The mail server 127.0.0.1:9 failed: [Errno 111] Connection refused"
    )


def test_a_deleted_rule_leaves_its_history_and_its_unsent_messages_fail_saying_why(receiver):
    failing_connector()
    rule = make_rule("webhook", receiver().url)
    alerts.evaluate()
    rule.delete()
    alert_delivery.send_due()
    delivery = AlertDelivery.objects.get()
    assert (delivery.status, delivery.rule_name) == ("failed", "ops")
    assert delivery.last_error == "Its rule was deleted before it was sent."


def test_send_alerts_evaluates_and_sends(receiver, capsys):
    hook = receiver()
    failing_connector()
    make_rule("webhook", hook.url)
    call_command("send_alerts")
    assert [b["state"] for b in hook.bodies] == ["firing"]
    assert "1 alert(s) queued, 1 sent, 0 failed attempt(s)" in capsys.readouterr().out
