"""Send one alert message: an HTTP POST to a webhook, or an e-mail through Django's SMTP settings.

Each failure raises DeliveryFailed with a message an operator can act on ("answered HTTP 500",
"did not answer within 5 s"); the URL itself is never quoted, since a Slack-style webhook URL
is a secret.
"""

import smtplib
import urllib.error
import urllib.parse
import urllib.request

from django.conf import settings
from django.core.mail import send_mail

from offsets.formats import alert_messages
from offsets.formats.alert_messages import Message
from offsets.outgoing import opener

USER_AGENT = "connect-offsets-dashboard-alerts/1"


class DeliveryFailed(Exception):
    """A message was not delivered; str() says why, secrets masked."""


# A webhook that redirects is misconfigured; following it would re-send the body elsewhere.
_opener = opener()


def send(channel: str, target: str, message: Message) -> None:
    """Deliver `message` on `channel` ("webhook", "slack", "email") to `target`."""
    if channel == "email":
        send_email([a.strip() for a in target.split(",") if a.strip()], message)
    elif channel == "slack":
        post_json(target.strip(), alert_messages.slack_body(message))
    else:
        post_json(target.strip(), alert_messages.json_body(message))


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
    try:
        with _opener.open(request, timeout=timeout) as response:
            response.read(65536)
    except urllib.error.HTTPError as exc:
        answer = exc.read(200).decode("utf-8", "replace").strip()
        text = f"The webhook at {host} answered HTTP {exc.code} {exc.reason}"
        if 300 <= exc.code < 400:
            # Only the target's host: the rest of a webhook URL may be its secret.
            target = urllib.parse.urlsplit(exc.headers.get("Location", "")).hostname or "?"
            text += f", a redirect to {target} that is not followed"
        raise DeliveryFailed(_described(text + (f": {answer}" if answer else ""))) from None
    except TimeoutError:
        raise DeliveryFailed(
            f"The webhook at {host} did not answer within {timeout} s (ALERT_WEBHOOK_TIMEOUT)."
        ) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise DeliveryFailed(
                f"The webhook at {host} did not answer within {timeout} s (ALERT_WEBHOOK_TIMEOUT)."
            ) from None
        raise DeliveryFailed(
            _described(f"The webhook at {host} could not be reached: {exc.reason}")
        ) from None
    except (OSError, ValueError) as exc:
        raise DeliveryFailed(_described(f"The webhook at {host} failed: {exc}")) from None


def send_email(addresses: list[str], message: Message) -> None:
    """Send a plain-text e-mail through Django's default mailer (settings.MAILERS)."""
    options = settings.MAILERS.get("default", {}).get("OPTIONS", {})
    server = f"The mail server {options.get('host', '?')}:{options.get('port', '?')}"
    try:
        send_mail(
            alert_messages.email_subject(message),
            alert_messages.email_body(message),
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
    return alert_messages.describe_failure(" ".join(text.split()))
