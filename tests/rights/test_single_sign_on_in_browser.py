"""Single sign-on through a real OpenID provider, in Chromium: the granted cluster only, the
provider's groups at each login, and every spoiled answer refused with a plain page."""

import pytest
from django.contrib.auth.models import Group
from django.utils.csp import CSP

from dashboard.oidc import provider as discovery
from offsets.edits import audit
from offsets.models import AuditEvent, Grant, ProviderGroup, ProviderIdentity, Role
from tests.support import factories, oidc_provider
from tests.support.browser_pages import TIMEOUT_MS

pytestmark = pytest.mark.django_db(transaction=True)

SEEN, HIDDEN = "team-a-cluster", "team-b-cluster"


@pytest.fixture(scope="session")
def test_provider(live_server, tmp_path_factory):
    # A process of its own: the provider is Node; started once per test process.
    started = oidc_provider.start(tmp_path_factory.mktemp("oidc") / "state.json", live_server.url)
    yield started
    started.process.terminate()
    started.process.wait(timeout=10)
    started.process.stdout.close()


@pytest.fixture
def sso(settings, test_provider):
    settings.OIDC_ENABLED = True
    settings.OIDC_ISSUER = test_provider.issuer
    settings.OIDC_DISCOVERY_URL = f"{test_provider.issuer}/.well-known/openid-configuration"
    settings.OIDC_RP_CLIENT_ID = oidc_provider.CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = oidc_provider.CLIENT_SECRET
    settings.OIDC_RP_SCOPES = "openid profile email groups"
    settings.OIDC_PROVIDER_NAME = "the test provider"
    # As settings.py does: the logout form's redirect leads to the provider.
    settings.SECURE_CSP = {**settings.SECURE_CSP, "form-action": [CSP.SELF, test_provider.issuer]}
    discovery.forget()
    for name, claim in ((SEEN, "kafka-team-a"), (HIDDEN, "kafka-team-b")):
        group = Group.objects.create(name=name)
        ProviderGroup.objects.create(claim_value=claim, group=group)
        Grant.objects.create(group=group, role=Role.EDITOR, cluster=factories.cluster(name))
    test_provider.set_accounts({"alice": ["kafka-team-a"], "bob": ["kafka-team-b"]})
    return test_provider


@pytest.fixture
def page(page):
    page.set_default_timeout(TIMEOUT_MS)
    return page


def sso_log_in(page, live_server, account: str):
    """Log in at the provider from the dashboard's login page; return the callback's answer."""
    page.goto(f"{live_server.url}/login/")
    page.click("#sso-login")
    page.fill("input[name=login]", account)
    page.fill("input[name=password]", "any")
    with page.expect_response(lambda r: "/oidc/callback/" in r.url) as callback:
        page.click("button[type=submit]")
    return callback.value


def test_a_provider_account_sees_only_the_cluster_its_groups_grant(page, live_server, sso):
    sso_log_in(page, live_server, "alice")
    page.wait_for_selector("#clusters")
    assert SEEN in page.inner_text("#clusters")
    assert HIDDEN not in page.content()
    assert page.goto(f"{live_server.url}/clusters/{HIDDEN}/connectors/").status == 404
    assert page.goto(f"{live_server.url}/clusters/{SEEN}/connectors/").status == 200
    identity = ProviderIdentity.objects.get(subject="alice")
    assert (identity.issuer, identity.user.username) == (sso.issuer, "alice")
    assert audit.actor_fields(identity.user)["actor_subject"] == "alice"


def test_groups_changed_at_the_provider_apply_at_the_next_login(page, live_server, sso):
    sso_log_in(page, live_server, "alice")
    page.wait_for_selector("#clusters")
    assert SEEN in page.inner_text("#clusters")
    sso.set_accounts({"alice": ["kafka-team-b"]})
    # Logging out ends the provider's session too (RP-initiated logout), then comes back.
    page.click("form.logout button")
    page.click("button[name=logout]")
    page.wait_for_selector("input[name=username]")
    sso_log_in(page, live_server, "alice")
    page.wait_for_selector("#clusters")
    assert HIDDEN in page.inner_text("#clusters")
    assert SEEN not in page.content()
    user = ProviderIdentity.objects.get(subject="alice").user
    assert [group.name for group in user.groups.all()] == [HIDDEN]


@pytest.mark.parametrize(
    ("spoiled", "reason"),
    [
        ("signature", "signature is not valid"),
        ("expired", "has expired"),
        ("audience", "issued for another application"),
        ("replay", "nonce does not match"),
    ],
)
def test_a_spoiled_id_token_is_refused_with_a_plain_page(
    page, browser, live_server, sso, spoiled, reason
):
    # The replayed token is a real one from an earlier login, in another browser.
    earlier = browser.new_context()
    sso_log_in(earlier.new_page(), live_server, "bob")
    earlier.close()
    sso.set_accounts({"alice": ["kafka-team-a"], "bob": ["kafka-team-b"]}, id_token=spoiled)
    callback = sso_log_in(page, live_server, "alice")
    assert callback.status == 403
    assert "Login failed" in page.inner_text("h1")
    assert reason in page.inner_text("#login-failed")
    assert "Traceback" not in page.content()
    assert not ProviderIdentity.objects.filter(subject="alice").exists()
    assert page.goto(f"{live_server.url}/").url.startswith(f"{live_server.url}/login/")


def test_a_replayed_state_is_refused_with_a_plain_page(page, live_server, sso):
    callback = sso_log_in(page, live_server, "alice")
    page.wait_for_selector("#clusters")
    replayed = page.goto(callback.url)
    assert replayed.status == 400
    assert "already used" in page.inner_text("#login-failed")
    assert "Traceback" not in page.content()
    assert not AuditEvent.objects.exists()


def test_without_local_login_a_page_leads_through_the_provider_and_back(
    page, live_server, sso, settings
):
    settings.LOCAL_LOGIN = False
    page.goto(f"{live_server.url}/clusters/{SEEN}/connectors/")
    page.fill("input[name=login]", "alice")
    page.fill("input[name=password]", "any")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/clusters/{SEEN}/connectors/")
    assert page.inner_text("form.logout span") == "alice"
