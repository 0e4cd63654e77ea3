"""The single sign-on's pure rules: claims into a user name, the settings, the discovery
document."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from dashboard.oidc import config
from dashboard.oidc.claims import ClaimsRefused, profile_from, subject_of, username_from
from dashboard.oidc.provider import ProviderUnavailable, endpoints_from

DOCUMENT = {
    "issuer": "https://login.example.com/realms/main",
    "authorization_endpoint": "https://login.example.com/auth",
    "token_endpoint": "https://login.example.com/token",
    "userinfo_endpoint": "https://login.example.com/userinfo",
    "jwks_uri": "https://login.example.com/certs",
}


def test_the_preferred_username_names_the_user():
    assert username_from({"sub": "42", "preferred_username": "alice@example.com"}) == (
        "alice@example.com"
    )


@pytest.mark.parametrize("preferred", [None, "", "a b", "x" * 151, ["alice"], "<b>"])
def test_an_unusable_preferred_username_falls_back_to_the_subject(preferred):
    assert username_from({"sub": "42", "preferred_username": preferred}) == "oidc:42"


def test_a_subject_too_long_for_a_user_name_is_hashed():
    name = username_from({"sub": "s" * 255})
    assert name.startswith("oidc:") and len(name) <= 150
    assert name == username_from({"sub": "s" * 255})


@pytest.mark.parametrize("sub", [None, "", 42, "s" * 256])
def test_a_login_without_a_usable_subject_is_refused(sub):
    with pytest.raises(ClaimsRefused, match="subject"):
        subject_of({"sub": sub})


def test_the_profile_takes_only_strings():
    claims = {"email": "a@example.com", "given_name": ["Al"], "family_name": "Ice"}
    assert profile_from(claims) == {"email": "a@example.com", "first_name": "", "last_name": "Ice"}


def test_the_discovery_url_comes_from_the_issuer_unless_given():
    assert config.discovery_url("https://idp.example.com/", "") == (
        "https://idp.example.com/.well-known/openid-configuration"
    )
    assert config.discovery_url("", "https://idp.example.com/d") == "https://idp.example.com/d"
    assert config.discovery_url("", "") == ""


def test_a_discovery_url_that_is_no_address_is_refused():
    with pytest.raises(ImproperlyConfigured, match="OIDC_ISSUER"):
        config.discovery_url("login.example.com", "")


def test_the_scopes_must_include_openid():
    assert config.scopes("openid,profile email groups openid") == "openid profile email groups"
    with pytest.raises(ImproperlyConfigured, match="openid"):
        config.scopes("profile email")


def test_the_provider_origin_is_its_scheme_and_host():
    assert (
        config.provider_origin("https://idp.example.com:8443/x/y") == "https://idp.example.com:8443"
    )


def test_a_discovery_document_gives_the_endpoints():
    found = endpoints_from(
        {**DOCUMENT, "end_session_endpoint": "https://login.example.com/out"}, ""
    )
    assert found.token_endpoint == "https://login.example.com/token"
    assert found.end_session_endpoint == "https://login.example.com/out"
    assert endpoints_from(DOCUMENT, DOCUMENT["issuer"] + "/").end_session_endpoint is None


def test_a_discovery_document_of_another_issuer_is_refused():
    with pytest.raises(ProviderUnavailable, match="issuer"):
        endpoints_from(DOCUMENT, "https://evil.example.com")


def test_a_discovery_document_without_an_endpoint_is_refused():
    with pytest.raises(ProviderUnavailable, match="jwks_uri"):
        endpoints_from({**DOCUMENT, "jwks_uri": None}, "")
