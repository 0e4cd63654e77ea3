"""Send one alert message: an HTTP POST to a webhook, or an e-mail through Django's SMTP settings.

Each failure raises DeliveryFailed with a message an operator can act on ("answered HTTP 500",
"did not answer within 5 s"); the URL itself is never quoted, since a Slack-style webhook URL
is a secret.
"""

import http.client
import smtplib
import urllib.parse
import urllib.request

from django.conf import settings
from django.core.mail import send_mail

from offsets import outgoing
from offsets.alerts import messages
from offsets.alerts.messages import Message

USER_AGENT = "connect-offsets-dashboard-alerts/1"


class DeliveryFailed(Exception):
    """A message was not delivered; str() says why, secrets masked."""


# A webhook that redirects is misconfigured; following it would re-send the body elsewhere.
_opener = outgoing.opener()


def send(channel: str, target: str, message: Message) -> None:
    """Deliver `message` on `channel` ("webhook", "slack", "email") to `target`."""
    if channel == "email":
        send_email([a.strip() for a in target.split(",") if a.strip()], message)
    elif channel == "slack":
        post_json(target.strip(), messages.slack_body(message))
    else:
        post_json(target.strip(), messages.json_body(message))


def post_json(url: str, body: str) -> None:
    """POST a JSON body; any answer but 2xx within ALERT_WEBHOOK_TIMEOUT is a failure."""
    timeout = settings.ALERT_WEBHOOK_TIMEOUT
    host = urllib.parse.urlsplit(url).hostname or "?"
    request = urllib.request.Request(
        url,
        data=body.encode(),
        method="POST",
        headers={"Content-Type": "application/json; charset=utf-8", "User-Agent": USER_AGENT},
    )
    late = f"The webhook at {host} did not answer within {timeout} s (ALERT_WEBHOOK_TIMEOUT)."
    try:
        # The timeout bounds the whole answer too, so a receiver that drips cannot hold the
        # sender; of the body, only its start is read (it is quoted in an error at most).
        answer = outgoing.exchange(
            _opener, request, timeout=timeout, deadline=timeout, max_bytes=65536, keep_start=True
        )
    except outgoing.NotReached as exc:
        if exc.timed_out:
            raise DeliveryFailed(late) from None
        raise DeliveryFailed(
            _described(f"The webhook at {host} could not be reached: {exc}")
        ) from None
    except outgoing.TimedOut:
        raise DeliveryFailed(late) from None
    except outgoing.AnswerBroken as exc:
        raise DeliveryFailed(_described(f"The webhook at {host} {exc}")) from None
    if not 200 <= answer.status < 300:
        reason = http.client.responses.get(answer.status, "")
        text = f"The webhook at {host} answered HTTP {answer.status} {reason}".rstrip()
        if 300 <= answer.status < 400:
            # Only the target's host: the rest of a webhook URL may be its secret.
            target = urllib.parse.urlsplit(answer.headers.get("Location", "")).hostname or "?"
            text += f", a redirect to {target} that is not followed"
        quoted = answer.body[:200].decode("utf-8", "replace").strip()
        raise DeliveryFailed(_described(text + (f": {quoted}" if quoted else "")))


def send_email(addresses: list[str], message: Message) -> None:
    """Send a plain-text e-mail through Django's default mailer (settings.MAILERS)."""
    options = settings.MAILERS.get("default", {}).get("OPTIONS", {})
    server = f"The mail server {options.get('host', '?')}:{options.get('port', '?')}"
    try:
        send_mail(
            messages.email_subject(message),
            messages.email_body(message),
            settings.DEFAULT_FROM_EMAIL,
            addresses,
        )
    except TimeoutError:
        raise DeliveryFailed(
            f"{server} did not answer within {options.get('timeout')} s (EMAIL_TIMEOUT)."
        ) from None
    except (smtplib.SMTPException, OSError, ValueError) as exc:
        raise DeliveryFailed(_described(f"{server} failed: {exc}")) from None


def _described(text: str) -> str:
    return messages.describe_failure(" ".join(text.split()))
