"""Single sign-on's settings and rules without a provider: LOCAL_LOGIN, the break-glass login,
the login button, a provider that does not answer, users by subject, the audit's subject.
The logins themselves run in Chromium against a real provider (tests/browser/)."""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from dashboard.oidc import provider
from dashboard.oidc.users import sign_in
from offsets.edits import audit
from offsets.models import AuditEvent, ProviderGroup, ProviderIdentity
from tests.support import factories

pytestmark = pytest.mark.django_db

ISSUER = "https://login.example.com"


@pytest.fixture
def sso(settings):
    settings.OIDC_ENABLED = True
    settings.OIDC_ISSUER = ""
    # Nothing listens on port 1: the provider "does not answer" at once.
    settings.OIDC_DISCOVERY_URL = "http://127.0.0.1:1/.well-known/openid-configuration"
    settings.OIDC_RP_CLIENT_ID = "dashboard"
    settings.OIDC_PROVIDER_NAME = "Example SSO"
    provider.forget()
    return settings


def test_without_a_provider_the_sso_routes_answer_404_and_the_page_has_no_button(client):
    assert client.get(reverse("oidc_authentication_init")).status_code == 404
    assert client.get(reverse("oidc_authentication_callback")).status_code == 404
    assert b"sso-login" not in client.get(reverse("login")).content


def test_the_login_page_offers_the_provider_beside_the_password(client, sso):
    page = client.get(reverse("login") + "?next=/clusters/")
    assert b"Log in with Example SSO" in page.content
    assert b"/oidc/authenticate/?next=/clusters/" in page.content
    assert b'name="password"' in page.content


def test_without_local_login_the_login_page_sends_people_to_the_provider(client, sso):
    sso.LOCAL_LOGIN = False
    response = client.get(reverse("login") + "?next=/clusters/")
    assert response.status_code == 302
    assert response["Location"] == "/oidc/authenticate/?next=%2Fclusters%2F"


def test_a_provider_that_does_not_answer_gets_a_plain_page(client, sso):
    response = client.get(reverse("oidc_authentication_init"))
    assert response.status_code == 503
    assert b"does not answer" in response.content
    assert b"Traceback" not in response.content


def test_a_callback_without_a_login_under_way_is_refused_plainly(client, sso):
    response = client.get(reverse("oidc_authentication_callback") + "?code=x&state=y")
    assert response.status_code == 400
    assert b"already used" in response.content


def start_login(client, monkeypatch) -> str:
    """Start a login at the provider from this browser; return its state."""
    paths = ("authorize", "token", "userinfo", "jwks")
    found = provider.ProviderEndpoints(ISSUER, *(f"{ISSUER}/{path}" for path in paths), None)
    monkeypatch.setattr(provider, "endpoints", lambda: found)
    response = client.get(reverse("oidc_authentication_init"))
    assert response.status_code == 302 and response["Location"].startswith(f"{ISSUER}/authorize")
    return parse_qs(urlsplit(response["Location"]).query)["state"][0]


def test_the_provider_s_error_is_shown_as_data(client, sso, monkeypatch):
    state = start_login(client, monkeypatch)
    url = reverse("oidc_authentication_callback") + f"?error=access_denied&state={state}"
    response = client.get(url + "&error_description=<b>no")
    assert response.status_code == 403
    assert b"refused the login: access_denied (&lt;b&gt;no)" in response.content
    assert state not in client.session["oidc_states"]  # used once: the link cannot be replayed
    assert client.get(url).status_code == 400


@pytest.mark.parametrize("state", ["", "&state=", "&state=not-a-login-started-here"])
def test_an_error_link_from_elsewhere_never_logs_anyone_out(
    client, sso, monkeypatch, django_user_model, state
):
    started = start_login(client, monkeypatch)
    client.force_login(django_user_model.objects.create_user("alice"))
    url = reverse("oidc_authentication_callback") + "?error=access_denied&error_description=x"
    response = client.get(url + state)
    assert response.status_code == 400
    assert b"No login was started from this browser" in response.content
    assert b"still logged in as alice" in response.content
    assert b"refused the login" not in response.content  # another site's words are not shown
    assert client.get(reverse("home")).status_code == 200
    assert started in client.session["oidc_states"]  # the login under way can still finish


def test_an_error_answering_a_login_this_browser_started_ends_the_session(
    client, sso, monkeypatch, django_user_model
):
    client.force_login(django_user_model.objects.create_user("alice"))
    state = start_login(client, monkeypatch)
    url = reverse("oidc_authentication_callback") + f"?error=access_denied&state={state}"
    response = client.get(url)
    assert response.status_code == 403 and b"you are not logged in" in response.content
    assert client.get(reverse("home")).status_code == 302


def test_without_local_login_passwords_are_refused_but_a_break_glass_superuser(
    client, sso, django_user_model
):
    django_user_model.objects.create_user("local", password="local-password")
    django_user_model.objects.create_superuser("root", password="root-password")
    sso.LOCAL_LOGIN = False
    assert not client.login(username="local", password="local-password")
    assert not client.login(username="root", password="root-password")
    sso.BREAK_GLASS_LOGIN = True
    assert not client.login(username="local", password="local-password")
    assert client.login(username="root", password="root-password")


def test_a_provider_account_is_found_by_its_subject_whatever_its_name(django_user_model):
    first = sign_in(
        issuer=ISSUER, claims={"sub": "s-1", "preferred_username": "al"}, groups_claim="groups"
    )
    again = sign_in(
        issuer=ISSUER, claims={"sub": "s-1", "preferred_username": "alice"}, groups_claim="groups"
    )
    assert again.pk == first.pk and again.username == "alice"
    assert ProviderIdentity.objects.get(user=again).subject == "s-1"


def test_a_provider_account_never_takes_over_a_local_user_of_its_name(django_user_model):
    local = django_user_model.objects.create_user("admin")
    user = sign_in(
        issuer=ISSUER, claims={"sub": "s-2", "preferred_username": "admin"}, groups_claim="groups"
    )
    assert user.pk != local.pk and user.username == "oidc:s-2"


def test_the_groups_claim_is_applied_at_each_sign_in():
    team = Group.objects.create(name="team")
    ProviderGroup.objects.create(claim_value="kafka-team", group=team)
    claims = {"sub": "s-3", "groups": ["kafka-team"]}
    user = sign_in(issuer=ISSUER, claims=claims, groups_claim="groups")
    assert list(user.groups.all()) == [team]
    user = sign_in(issuer=ISSUER, claims={"sub": "s-3", "groups": []}, groups_claim="groups")
    assert not user.groups.exists()


def test_the_audit_keeps_the_provider_subject_of_an_sso_actor(django_user_model):
    local = django_user_model.objects.create_user("local")
    sso_user = sign_in(issuer=ISSUER, claims={"sub": "s-4"}, groups_claim="groups")
    assert audit.actor_fields(local)["actor_subject"] == ""
    assert audit.actor_fields(sso_user) == {
        "actor": sso_user,
        "actor_name": "oidc:s-4",
        "actor_subject": "s-4",
    }
    assert audit.actor_fields(None)["actor_name"] == "system"


def test_the_audit_log_shows_the_provider_subject_beside_the_name(client, django_user_model):
    cluster = factories.cluster("prod")
    sso_user = sign_in(
        issuer=ISSUER, claims={"sub": "s-5", "preferred_username": "eve"}, groups_claim="groups"
    )
    audit.record_connector(cluster, "file-src", AuditEvent.Action.STOPPED, sso_user, "", {})
    client.force_login(django_user_model.objects.create_superuser("root"))
    page = client.get(reverse("edit-list", args=["prod"]))
    assert b"eve <span" in page.content and b"(SSO s-5)" in page.content
    assert AuditEvent.objects.get().actor_subject == "s-5"


def test_turning_local_login_off_ends_local_sessions_but_a_break_glass_superuser_s(
    client, sso, django_user_model
):
    client.force_login(django_user_model.objects.create_user("local"))
    assert client.get("/").status_code == 200
    sso.LOCAL_LOGIN = False
    assert client.get("/").status_code == 302
    sso.BREAK_GLASS_LOGIN = True
    client.force_login(django_user_model.objects.create_superuser("root"))
    assert client.get("/").status_code == 200
