"""Production settings come from the environment, pass `check --deploy`, and every response
carries the security headers (the CSP the pages are built to live with)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.production_env import production_settings_env

ROOT = Path(__file__).resolve().parents[2]
STRONG_KEY = "k3J9-qv_Zt8wP1xN5rL0mB7yH2cD6fG4sA-eU9oI3tR8vW1qX5zC0nM7bV2lK6jH"


def production_env(tmp_path, **overrides) -> dict:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "SECURE_", "SECRET_KEY", "ALLOWED_HOSTS"))
    }
    env.update(
        production_settings_env(secret_key=STRONG_KEY, allowed_hosts="offsets.example.com"),
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        RUN_DIR=str(tmp_path / "run"),
    )
    env.update(overrides)
    return {key: value for key, value in env.items() if value is not None}


def manage(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    result = manage(production_env(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_fails_with_the_local_defaults(tmp_path):
    """The same check on the local (DEBUG) defaults finds the problems it should."""
    env = production_env(tmp_path, DEBUG="true", SECRET_KEY=None, ALLOWED_HOSTS=None)
    result = manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode != 0
    for check in ("security.W004", "security.W008", "security.W009", "security.W012"):
        assert check in result.stderr, check


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"SECRET_KEY": None}, "SECRET_KEY (or SECRET_KEY_FILE) must be set"),
        ({"SECRET_KEY": "short-and-guessable"}, "SECRET_KEY is too weak"),
        ({"SECRET_KEY": "ab" * 40}, "SECRET_KEY is too weak"),
        ({"SECRET_KEY": "django-insecure-" + "x" * 60}, "must be set"),
        ({"ALLOWED_HOSTS": None}, "ALLOWED_HOSTS must be set"),
        ({"SECURE_SSL_REDIRECT": "maybe"}, "SECURE_SSL_REDIRECT must be true or false"),
    ],
)
def test_production_refuses_to_start_with_a_missing_or_weak_setting(tmp_path, overrides, message):
    result = manage(production_env(tmp_path, **overrides), "check")
    assert result.returncode != 0
    assert message in result.stderr


def test_the_secret_key_can_come_from_a_file(tmp_path):
    key_file = tmp_path / "secret_key"
    key_file.write_text(STRONG_KEY + "\n")
    env = production_env(tmp_path, SECRET_KEY=None, SECRET_KEY_FILE=str(key_file))
    result = manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr


PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.test import Client
client = Client(HTTP_HOST="offsets.example.com")
plain = client.get("/login/")
secure = client.get("/login/", secure=True)
print(json.dumps({
    "plain": [plain.status_code, plain.get("Location")],
    "secure": [secure.status_code, dict(secure.headers)],
    "cookies": [settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE],
}))
"""


def run_probe(script: str, tmp_path) -> dict:
    """Run `script` under the production settings; return the JSON it printed last."""
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=production_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_redirects_to_https_and_sends_hsts(tmp_path):
    probe = run_probe(PROBE, tmp_path)
    assert probe["plain"] == [301, "https://offsets.example.com/login/"]
    status, headers = probe["secure"]
    assert status == 200
    assert headers["Strict-Transport-Security"] == "max-age=31536000"
    assert probe["cookies"] == [True, True]


PROBES_PROBE = """
import json, django
django.setup()
from django.test import Client
# A kubelet: plain HTTP, the pod's address as the Host, which ALLOWED_HOSTS does not list.
client = Client(HTTP_HOST="10.1.2.3:8000")
answers = {path: client.get(path) for path in ("/healthz", "/readyz", "/login/")}
print(json.dumps({path: [r.status_code, r.get("Content-Type")] for path, r in answers.items()}))
"""


def test_the_probes_answer_a_kubelet_over_plain_http_with_the_pods_address(tmp_path):
    """Not redirected to HTTPS (a kubelet counts a 3xx as success) nor refused for the Host
    (400: never ready); every other URL still is."""
    answers = run_probe(PROBES_PROBE, tmp_path)
    assert answers["/healthz"] == [200, "application/json"]
    # No migrations ran on this test's database: unready, and saying so in JSON.
    assert answers["/readyz"] == [503, "application/json"]
    assert answers["/login/"][0] == 400


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/login/", "/", "/api/v1/clusters/"])
def test_every_response_carries_the_security_headers(client, user, url):
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    policy = dict(
        directive.strip().split(" ", 1)
        for directive in response["Content-Security-Policy"].split(";")
    )
    assert policy["default-src"] == "'self'"
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert "unsafe" not in response["Content-Security-Policy"]


@pytest.mark.django_db
def test_the_pages_have_no_inline_script_or_style_the_policy_would_block(client, user):
    from tests.support import factories
    from tests.support.edits_factory import make_edit

    cluster = factories.cluster("c1")
    factories.snapshot(cluster, "file-src")
    edit = make_edit(cluster, user)
    client.force_login(user)
    for url in (
        "/login/",
        "/",
        "/clusters/c1/edits/",
        f"/clusters/c1/edits/{edit.pk}/",
        # DRF's browsable API (templates/rest_framework/api.html drops its inline <style>)
        "/api/v1/clusters/",
        "/api/v1/edits/",
    ):
        html = client.get(url, HTTP_ACCEPT="text/html").content.decode()
        assert " style=" not in html and "<style" not in html, url
        assert "<script>" not in html and " on" + "click=" not in html, url


def test_every_htmx_config_keeps_htmx_from_writing_inline_styles():
    """The CSP blocks inline styles: htmx must neither inject its indicator <style> nor copy
    a style attribute (a textarea the browser sized) onto swapped-in elements."""
    pattern = re.compile(r"\{% block htmx_config %\}(.*?)\{% endblock %\}", re.S)
    templates = ROOT / "templates"
    found = 0
    for path in templates.rglob("*.html"):
        for block in pattern.findall(path.read_text()):
            config = json.loads(block)
            found += 1
            assert config["includeIndicatorStyles"] is False, path
            assert "style" not in config["attributesToSettle"], path
    assert found >= 4
