"""CSRF: every POST with a session needs the token (pages, htmx and the API alike); an API
call authenticated by a token needs none (no cookie, so nothing for another site to ride on)."""

import re

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from offsets.models import AuditEvent, OffsetEdit
from tests.support import factories
from tests.support.access import endpoints, sample_params
from tests.support.edits_factory import make_edit

pytestmark = pytest.mark.django_db


@pytest.fixture
def csrf_client():
    return Client(enforce_csrf_checks=True)


@pytest.fixture
def seeded(editor):
    cluster = factories.cluster("c1")
    factories.snapshot(cluster, "file-src")
    edit = make_edit(cluster, editor)
    return edit, sample_params(
        cluster=cluster.name, connector="file-src", edit_pk=edit.pk, admin_pk=cluster.pk
    )


def test_every_post_without_the_token_is_refused(csrf_client, seeded, admin_user):
    """A superuser's session (every role) posting anywhere without the token gets 403."""
    edit, params = seeded
    csrf_client.force_login(admin_user)
    accepted = []
    for endpoint in endpoints(params):
        response = csrf_client.post(endpoint.url, {"comment": "x"}, HTTP_HX_REQUEST="true")
        if response.status_code != 403 or "CSRF" not in response.content.decode():
            accepted.append(f"{endpoint.url} ({endpoint.name}) -> {response.status_code}")
    assert not accepted, "POST accepted without a CSRF token:\n" + "\n".join(accepted)
    edit.refresh_from_db()
    assert edit.state == "draft"
    assert not AuditEvent.objects.exists()


def page_token(client, url) -> str:
    """The token the page hands htmx, from <body hx-headers>."""
    html = client.get(url).content.decode()
    match = re.search(r"hx-headers='\{\"X-CSRFToken\": \"([^\"]+)\"\}'", html)
    assert match, "the page has no <body hx-headers> with the CSRF token"
    return match[1]


def test_an_htmx_post_with_the_pages_token_is_accepted(csrf_client, seeded, editor):
    edit, _ = seeded
    csrf_client.force_login(editor)
    url = f"/clusters/c1/edits/{edit.pk}/"
    token = page_token(csrf_client, url)

    response = csrf_client.post(
        f"{url}submit/", {"comment": ""}, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=token
    )

    assert response.status_code == 200
    edit.refresh_from_db()
    assert edit.state == "submitted"


def test_an_api_post_with_a_session_needs_the_token(csrf_client, seeded, editor):
    edit, _ = seeded
    csrf_client.force_login(editor)
    refused = csrf_client.post(f"/api/v1/edits/{edit.pk}/submit/", {}, "application/json")
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    token = page_token(csrf_client, "/")
    accepted = csrf_client.post(
        f"/api/v1/edits/{edit.pk}/submit/", {}, "application/json", HTTP_X_CSRFTOKEN=token
    )
    assert accepted.status_code == 200
    assert OffsetEdit.objects.get().state == "submitted"


def test_an_api_post_with_a_token_needs_no_csrf_token(csrf_client, seeded, editor):
    edit, _ = seeded
    key = Token.objects.create(user=editor).key
    response = csrf_client.post(
        f"/api/v1/edits/{edit.pk}/submit/",
        {},
        "application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert response.status_code == 200
    assert OffsetEdit.objects.get().state == "submitted"


def test_the_csrf_cookie_is_not_readable_by_scripts(csrf_client, seeded, editor):
    csrf_client.force_login(editor)
    csrf_client.get("/")
    assert csrf_client.cookies["csrftoken"]["httponly"]
