"""The real app server with its PostgreSQL database down: 503 with a message, never a 500.

A bad DATABASE_URL (nothing listens on port 1) stands for a database that is restarting or
unreachable. The server is waitress in a process of its own (tests/support/load.py), so the whole
stack is the one deployed: middleware, sessions, DRF authentication.
"""

import httpx
import pytest

from tests.support.load import CSRF_INPUT, AppServer

pytestmark = pytest.mark.integration

DOWN = "postgres://dashboard@127.0.0.1:1/dashboard"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "server.log"
    with AppServer({"DATABASE_URL": DOWN}, threads=2, log=log) as app:
        yield app


def test_logging_in_answers_503_with_a_message(server):
    with httpx.Client(base_url=server.base_url) as client:
        form = client.get("/login/")  # the form itself needs no database
        assert form.status_code == 200
        token = CSRF_INPUT.search(form.text).group(1)
        response = client.post(
            "/login/",
            data={"username": "erin", "password": "x", "csrfmiddlewaretoken": token},
        )
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"
    assert "Database unavailable" in response.text
    assert "the database server could not be reached" in response.text
    # Where the database lives is for the log, not for whoever asks.
    assert "127.0.0.1" not in response.text and "port 1" not in response.text


def test_a_page_with_a_session_answers_503(server):
    response = httpx.get(f"{server.base_url}/", cookies={"sessionid": "x" * 32})
    assert response.status_code == 503
    assert 'data-error="database-unavailable"' in response.text


def test_the_api_answers_503_json(server):
    response = httpx.get(
        f"{server.base_url}/api/v1/clusters/", headers={"Authorization": "Token " + "0" * 40}
    )
    assert response.status_code == 503
    body = response.json()
    assert body["code"] == "database_unavailable" and "busy or unavailable" in body["detail"]
