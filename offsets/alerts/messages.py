"""The bodies an alert is sent as: generic JSON, Slack-compatible JSON, e-mail (no I/O).

Connector names come from Kafka and anyone with Connect access picks them: they are data.
JSON bodies carry them JSON-encoded; Slack's text escapes the three characters Slack reads
as markup; an e-mail subject drops control characters (a line break would end the header).
"""

import json
from dataclasses import dataclass

from offsets.domain.masking import mask_text


@dataclass(frozen=True)
class Message:
    """What one delivery says, whatever its channel."""

    rule: str
    cluster: str
    connector: str
    condition: str
    state: str  # "firing" or "resolved"
    summary: str
    details: dict
    url: str
    at: str  # ISO 8601

    def headline(self) -> str:
        where = f"{self.cluster}/{self.connector}" if self.connector else self.cluster
        state = "FIRING" if self.state == "firing" else "RESOLVED"
        return f"[{state}] {where}: {self.summary}"


def json_body(message: Message) -> str:
    """The generic webhook body: one JSON object, every field a plain value."""
    return json.dumps(
        {
            "rule": message.rule,
            "cluster": message.cluster,
            "connector": message.connector,
            "condition": message.condition,
            "state": message.state,
            "summary": message.summary,
            "details": message.details,
            "url": message.url,
            "at": message.at,
        },
        ensure_ascii=False,
        sort_keys=False,
    )


def slack_escape(text: str) -> str:
    """Escape what Slack's mrkdwn reads as markup (links, mentions: <...>) in data."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(message: Message) -> str:
    """The Slack-compatible body: {"text": ...} (incoming webhooks, Mattermost, Rocket.Chat)."""
    lines = [slack_escape(message.headline()), f"rule: {slack_escape(message.rule)}"]
    if message.url:
        lines.append(slack_escape(message.url))
    return json.dumps({"text": "\n".join(lines)}, ensure_ascii=False)


def email_subject(message: Message) -> str:
    """A one-line subject: control characters of names become spaces."""
    text = "".join(" " if ord(c) < 32 or 0x7F <= ord(c) < 0xA0 else c for c in message.headline())
    return text[:200]


def email_body(message: Message) -> str:
    """The plain-text e-mail body."""
    lines = [
        message.headline(),
        "",
        f"Rule: {message.rule}",
        f"Cluster: {message.cluster}",
        f"Connector: {message.connector or '-'}",
        f"Condition: {message.condition}",
        f"State: {message.state} at {message.at}",
    ]
    lines += [f"{key}: {value}" for key, value in message.details.items()]
    if message.url:
        lines += ["", message.url]
    return "\n".join(lines) + "\n"


def describe_failure(text: str, limit: int = 500) -> str:
    """A delivery error as stored and shown: secrets masked, bounded."""
    return mask_text(text)[:limit]
