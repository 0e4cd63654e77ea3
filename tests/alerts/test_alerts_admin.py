"""Alert rules managed in the admin: validated on save; the delivery history read-only."""

import pytest
from django.utils import timezone

from offsets.models import AlertDelivery, AlertRule

pytestmark = pytest.mark.django_db

FORM = {
    "name": "ops",
    "enabled": "on",
    "connector_pattern": "orders-*",
    "pattern_syntax": "glob",
    "on_failed": "on",
    "lag_statuses": "WARN,ERR",
    "no_commit_flush_intervals": "5",
    "edit_pending_hours": "4",
    "channel": "webhook",
    "target": "https://hooks.example.com/alerts",
    "quiet_minutes": "30",
}


def delivery(status: str = "failed") -> AlertDelivery:
    return AlertDelivery.objects.create(
        rule_name="ops",
        subject="prod/orders/failed",
        kind="firing",
        body={"connector": "orders"},
        status=status,
        attempts=6,
        last_error="The webhook at hooks.example.com answered HTTP 500",
        created=timezone.now(),
    )


def test_a_rule_is_added_in_the_admin(admin_client):
    response = admin_client.post("/admin/offsets/alertrule/add/", FORM)
    assert response.status_code == 302
    assert AlertRule.objects.get().conditions() == {"failed"}


def test_a_bad_pattern_is_refused_in_the_admin_with_a_clear_message(admin_client):
    rule = AlertRule.objects.create(name="ops", target="https://hooks.example.com/alerts")
    form = {**FORM, "connector_pattern": "orders-(", "pattern_syntax": "regex"}
    response = admin_client.post(f"/admin/offsets/alertrule/{rule.pk}/change/", form)
    assert response.status_code == 200
    assert "The pattern &#x27;orders-(&#x27; is not a valid regex" in response.text
    assert AlertRule.objects.get().connector_pattern == ""  # what was stored is kept


def test_the_delivery_history_filters_by_status_and_cannot_be_edited(admin_client):
    sent, failed = delivery("sent"), delivery("failed")
    response = admin_client.get("/admin/offsets/alertdelivery/?status__exact=failed")
    assert response.status_code == 200
    assert f"/admin/offsets/alertdelivery/{failed.pk}/change/" in response.text
    assert f"/admin/offsets/alertdelivery/{sent.pk}/change/" not in response.text
    page = admin_client.get(f"/admin/offsets/alertdelivery/{failed.pk}/change/")
    assert "answered HTTP 500" in page.text and 'name="_save"' not in page.text
    assert admin_client.get("/admin/offsets/alertdelivery/add/").status_code == 403


def test_a_failed_delivery_can_be_queued_again(admin_client):
    failed, sent = delivery("failed"), delivery("sent")
    admin_client.post(
        "/admin/offsets/alertdelivery/",
        {"action": "retry_now", "_selected_action": [failed.pk, sent.pk]},
    )
    failed.refresh_from_db()
    sent.refresh_from_db()
    assert (failed.status, failed.attempts) == ("pending", 0)
    assert sent.status == "sent"
