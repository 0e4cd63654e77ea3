"""Alerts: rules evaluated against the stored results, messages queued, then sent.

    rules.py        the pure rules: conditions, transitions, quiet period, retry backoff
    messages.py     the bodies: generic JSON, Slack-compatible, e-mail
    evaluation.py   stored results -> decisions -> queued AlertDelivery rows
    delivery.py     sending what is due, retries, the background sender
    channels.py     one webhook POST or one e-mail, with clear errors

The rows live in offsets/models/alerts.py (Django loads every model from offsets.models),
their admin pages in offsets/admin_alerts.py, the loop in `manage.py send_alerts`.
"""
