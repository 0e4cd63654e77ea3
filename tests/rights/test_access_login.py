"""Every page and endpoint needs a login: the URL resolver is walked, nothing is listed by hand
except the few URLs that must work without one."""

import pytest
from django.urls import reverse

from offsets.models import Cluster
from tests.support import factories
from tests.support.access import endpoints, sample_params
from tests.support.edits_factory import make_edit

pytestmark = pytest.mark.django_db

# The only URLs an anonymous visitor may use, by name. Each one is checked to exist, so the
# list cannot silently outlive a URL; anything else anonymous is turned away.
EXEMPT = {
    "login": "the login form itself",
    "logout": "POST-only; logging out nobody changes nothing",
    "admin:login": "the admin's login form",
    "oidc_authentication_init": "single sign-on's start: on to the provider (404 when off)",
    "oidc_authentication_callback": "the provider's answer: logs in or says why not (404 when "
    "off; tests/rights/test_single_sign_on_in_browser.py)",
    "admin:logout": "the admin's logout (sends an anonymous visitor to the admin login)",
    "metrics": "Prometheus has no session: a bearer token or an allowed address, closed by "
    "default (tests/deploy/test_metrics.py)",
    "favicon": "the icon browsers ask for on every page, the login and error pages too "
    "(tests/pages/test_error_pages_in_browser.py)",
}
# /healthz and /readyz are no URLs: a middleware answers them before the resolver, without a
# login, with counts and never names (dashboard/health.py, tests/deploy/test_health.py).


@pytest.fixture
def seeded(editor):
    # Port 1: nothing listens there, so a view that reached Kafka would fail fast and visibly.
    cluster = factories.cluster("c1")
    factories.snapshot(cluster, "file-src")
    edit = make_edit(cluster, editor)
    return sample_params(
        cluster=cluster.name, connector="file-src", edit_pk=edit.pk, admin_pk=cluster.pk
    )


def _is_login_redirect(response, login_url: str) -> bool:
    return response.status_code == 302 and response["Location"].split("?")[0] == login_url


def test_every_url_turns_an_anonymous_visitor_away(client, seeded, admin_user):
    """Pages redirect to the login page, the API answers 401/403, the admin its own login.

    A 405 is accepted only where the view does not take that method at all: the same request
    from a logged-in superuser is checked to get the 405 too, so nothing hides behind it.
    """
    checked, problems = set(), []
    staff = type(client)()
    staff.force_login(admin_user)
    for endpoint in endpoints(seeded):
        if endpoint.name in EXEMPT:
            continue
        checked.add(endpoint.name)
        login = reverse("admin:login") if endpoint.is_admin else reverse("login")
        for method in ("get", "post"):
            response = getattr(client, method)(endpoint.url)
            if endpoint.is_api:
                turned_away = response.status_code in (401, 403)
            else:
                turned_away = _is_login_redirect(response, login)
            if not turned_away and response.status_code == 405:
                turned_away = getattr(staff, method)(endpoint.url).status_code == 405
            if not turned_away:
                problems.append(f"{method.upper()} {endpoint.url} ({endpoint.name}) -> {response}")
    assert not problems, "Reachable without a login:\n" + "\n".join(problems)
    # The walk really saw the project's URLs (a broken walker would check nothing).
    for name in ("home", "connector-offsets-json", "live-state", "edit-action", "edits-import"):
        assert name in checked
    for name in ("api-schema", "api-edit-apply", "api-refreshes", "admin:index"):
        assert name in checked


def test_the_exempt_urls_exist_and_are_the_only_ones(client, seeded):
    names = {endpoint.name for endpoint in endpoints(seeded)}
    assert set(EXEMPT) <= names, f"Exempt URLs that no longer exist: {set(EXEMPT) - names}"
    assert client.get(reverse("login")).status_code == 200


def test_the_api_accepts_a_token_and_rejects_a_bad_one(client, seeded, editor):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=editor)
    good = client.get("/api/v1/clusters/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert good.status_code == 200
    assert [item["name"] for item in good.json()] == ["c1"]
    bad = client.get("/api/v1/clusters/", HTTP_AUTHORIZATION="Token not-a-token")
    assert bad.status_code == 401
    assert bad["WWW-Authenticate"] == "Token"


def test_an_inactive_user_is_turned_away_even_with_a_session(client, seeded, editor):
    client.force_login(editor)
    editor.is_active = False
    editor.save()
    assert _is_login_redirect(client.get("/"), reverse("login"))
    assert client.get("/api/v1/clusters/").status_code == 401
    assert Cluster.objects.count() == 1


def test_logging_in_never_redirects_off_site(client, seeded, editor):
    response = client.post(
        "/login/?next=https://evil.example/steal",
        {"username": "erin", "password": "erin-password"},
    )
    assert response.status_code == 302 and response["Location"] == reverse("home")


def test_starting_a_refresh_never_redirects_off_site(client, seeded, operator, monkeypatch):
    from offsets.refresh import background

    monkeypatch.setattr(background, "_launch", lambda **kwargs: None)
    client.force_login(operator)
    response = client.post("/clusters/c1/refreshes/", {"next": "https://evil.example/"})
    assert response.status_code == 302 and response["Location"] == reverse("home")
