"""A worker's answer is hostile data: redirects, malformed framing, drips and huge bodies.

A fake worker on loopback answers each shape; a second listener on another loopback address
stands for the host a redirect points at and records whatever reaches it. The adapter, the
worker page, the API and the connector controls answer each with the adapter's own errors,
never a 500, and no credential leaves for the second address.
"""

import html
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from offsets import tuning
from offsets.alerts import channels as alert_channels
from offsets.alerts.channels import DeliveryFailed
from offsets.kafka.connect_rest import (
    ConnectAnswerBroken,
    ConnectAnswerTooLarge,
    ConnectAuthFailed,
    ConnectMalformed,
    ConnectRedirected,
    ConnectRest,
    ConnectRestError,
    ConnectSettings,
    ConnectUnreachable,
)
from offsets.models import AuditEvent, Cluster
from tests.support.edits_factory import make_edit
from tests.support.fake_connect_worker import FakeWorker

pytestmark = pytest.mark.django_db

SECRET = "worker-pw-9c2e55"
STANDALONE_FIXTURES = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "standalone"
VERSION = {"version": "3.7.0", "commit": "abc", "kafka_cluster_id": "k"}


@pytest.fixture
def worker():
    with FakeWorker() as fake:
        fake.answer("GET", "/", 200, VERSION)
        yield fake


@pytest.fixture
def elsewhere():
    """Another host (a second loopback address) that records what reaches it."""
    with FakeWorker(host="127.0.0.2") as fake:
        fake.answer("GET", "/", 200, VERSION)
        yield fake


@pytest.fixture
def cluster(worker):
    return Cluster.objects.create(
        name="c1",
        bootstrap_servers="127.0.0.1:1",
        connect_url=worker.url,
        connect_username="dash",
        connect_password=SECRET,
    )


def rest(worker: FakeWorker, **settings) -> ConnectRest:
    return ConnectRest(
        ConnectSettings(urls=(worker.url,), username="dash", password=SECRET, timeout=5, **settings)
    )


# --- Redirects ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("method", ["GET", "PATCH"])
def test_a_redirect_is_an_error_naming_its_target_and_is_never_followed(
    worker, elsewhere, status, method
):
    path = "/connectors/c/offsets"
    worker.redirect(method, path, f"{elsewhere.url}{path}?token=abc123", status)
    elsewhere.answer(method, path, 200, {"offsets": []})
    adapter = rest(worker)
    with pytest.raises(ConnectRedirected) as error:
        if method == "GET":
            adapter.offsets("c")
        else:
            adapter.alter_offsets("c", [])
    assert error.value.status == status
    assert f"redirects to {elsewhere.url}{path}" in error.value.message
    assert "abc123" not in error.value.message  # a token in the Location is masked
    assert elsewhere.requests == []


@pytest.mark.parametrize(
    "location", ["ftp://127.0.0.2/pub", "https://127.0.0.2:8443/", "http://127.0.0.1:notaport/"]
)
def test_a_redirect_to_another_scheme_or_a_bad_port_is_the_same_error(worker, location):
    worker.redirect("GET", "/", location)
    with pytest.raises(ConnectRedirected, match="redirects to"):
        rest(worker).worker_info()


def test_the_worker_page_and_api_report_a_redirect_and_send_nothing_elsewhere(
    client, user, worker, elsewhere, cluster
):
    worker.redirect("GET", "/", f"{elsewhere.url}/login")
    client.force_login(user)
    page = client.get("/clusters/c1/worker/")
    assert page.status_code == 200 and b"redirects to" in page.content
    api = client.get("/api/v1/clusters/c1/worker/")
    assert api.status_code == 502 and "redirects to" in api.json()["detail"]
    assert elsewhere.requests == []


def test_a_stop_answered_with_a_redirect_is_audited_and_nothing_reaches_the_target(
    client, editor, worker, elsewhere, cluster
):
    worker.redirect("PUT", "/connectors/src/stop", f"{elsewhere.url}/connectors/src/stop", 307)
    client.force_login(editor)
    response = client.post("/api/v1/clusters/c1/connectors/src/stop/")
    assert response.status_code == 502 and "redirects to" in response.json()["detail"]
    assert AuditEvent.objects.get(connector="src").action == "control-failed"
    assert elsewhere.requests == []


def test_a_webhook_that_redirects_fails_naming_the_target_host_and_nothing_is_resent(
    worker, elsewhere
):
    worker.redirect("POST", "/hook", f"{elsewhere.url}/hook", 307)
    with pytest.raises(DeliveryFailed, match=r"a redirect to 127\.0\.0\.2 that is not followed"):
        alert_channels.post_json(f"{worker.url}/hook", "{}")
    assert elsewhere.requests == []


# --- Malformed answers -------------------------------------------------------------------------

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
BROKEN = {
    "cut body": HEAD + b'Content-Length: 100\r\n\r\n{"version": "3.',
    "bad status line": b"HTTP/1.1 abc\r\n\r\n",
    "not http": b"SSH-2.0-OpenSSH_9.6\r\n",
    "nothing": b"",
    "too many headers": HEAD + b"".join(b"X-%d: y\r\n" % i for i in range(101)) + b"\r\n",
    "oversized header": HEAD + b"X-Big: " + b"y" * 70_000 + b"\r\n\r\n",
    "broken chunk": HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n",
    "cut chunk": HEAD + b"Transfer-Encoding: chunked\r\n\r\n100\r\n{}",
    "content-length of thousands of digits": HEAD + b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n",
}


@pytest.mark.parametrize("data", BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_answer_to_a_read_is_the_adapters_error(worker, data):
    worker.raw("GET", "/", data)
    with pytest.raises(ConnectRestError) as error:
        rest(worker).worker_info()
    assert isinstance(error.value, ConnectUnreachable | ConnectAnswerTooLarge)
    assert worker.url in error.value.message


@pytest.mark.parametrize("data", BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_answer_to_a_write_is_in_doubt_and_never_sent_again(worker, data):
    second = FakeWorker()
    with second:
        second.answer("PATCH", "/connectors/c/offsets", 200, {"message": "altered"})
        worker.raw("PATCH", "/connectors/c/offsets", data)
        adapter = ConnectRest(ConnectSettings(urls=(worker.url, second.url), timeout=5))
        with pytest.raises(ConnectAnswerBroken, match="it may have done it"):
            adapter.alter_offsets("c", [])
    assert second.requests == []


DEEP = b"[" * 100_000 + b"]" * 100_000
NESTED_TOO_DEEP = "the worker's answer is JSON nested deeper than 64 levels"
SHAPES = {
    "deep json": ("GET", "/", DEEP),
    "deep connectors": ("GET", "/connectors?expand=status", b'{"a": ' + DEEP + b"}"),
    "deep status": ("GET", "/connectors/a/status", DEEP),
    "deep offsets": ("GET", "/connectors/a/offsets", b'{"offsets": ' + DEEP + b"}"),
    "json deeper than connect": (
        "GET",
        "/",
        b'{"version": "3.7.0", "commit": ' + b"[" * 70 + b"]" * 70 + b"}",
    ),
    "connectors of wrong types": ("GET", "/connectors?expand=status", b'{"a": 5}'),
    "connectors not a mapping": ("GET", "/connectors?expand=status", b"[1, 2]"),
    "status state a list": (
        "GET",
        "/connectors/a/status",
        b'{"name": "a", "connector": {"state": ["RUNNING"]}, "tasks": []}',
    ),
    "config not a mapping": ("GET", "/connectors/a/config", b'"x"'),
}
CALLS = {
    "/": lambda adapter: adapter.worker_info(),
    "/connector-plugins?connectorsOnly=true": lambda adapter: adapter.plugin_classes(),
    "/connectors?expand=status": lambda adapter: adapter.connectors(),
    "/connectors/a/status": lambda adapter: adapter.status("a"),
    "/connectors/a/config": lambda adapter: adapter.config("a"),
    "/connectors/a/offsets": lambda adapter: adapter.offsets("a"),
}


@pytest.mark.parametrize(("method", "path", "body"), SHAPES.values(), ids=SHAPES.keys())
def test_an_answer_of_the_wrong_shape_is_malformed(worker, method, path, body):
    worker.answer(method, path, 200, body)
    with pytest.raises(ConnectMalformed) as error:
        CALLS[path](rest(worker))
    assert len(error.value.message) < 1000


@pytest.mark.parametrize("path", ["/", "/connectors?expand=status", "/connectors/a/offsets"])
def test_deep_json_in_a_success_says_how_deep_it_may_nest(worker, path):
    worker.answer("GET", path, 200, DEEP)
    with pytest.raises(ConnectMalformed, match=NESTED_TOO_DEEP):
        CALLS[path](rest(worker))


@pytest.mark.parametrize("status", [400, 401, 404, 409, 500, 503])
@pytest.mark.parametrize("body", [DEEP, b'{"message": ' + DEEP + b"}"], ids=["bare", "message"])
def test_deep_json_in_an_error_is_the_errors_words(worker, status, body):
    worker.answer("GET", "/connectors/a/status", status, body)
    with pytest.raises(ConnectRestError) as error:
        rest(worker).status("a")
    assert error.value.status == status
    assert NESTED_TOO_DEEP in error.value.message and len(error.value.message) < 1000


def test_a_version_of_thousands_of_digits_is_an_unknown_version(worker):
    worker.answer("GET", "/", 200, {"version": "9" * 5000 + ".1.0", "commit": [[[["x"]]]]})
    info = rest(worker).worker_info()
    assert not info.capabilities.known and len(info.version) <= 200 and len(info.commit) <= 200


def test_plugins_of_the_wrong_types_are_left_out(worker):
    body = [{"class": "a.Source"}, {"class": ["b"]}, {"class": {"c": 1}}, 5, None, {"type": "x"}]
    worker.answer("GET", "/connector-plugins?connectorsOnly=true", 200, body)
    assert rest(worker).plugin_classes() == {"a.Source"}


# --- Slow and huge answers ---------------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "PATCH"])
def test_an_answer_dripping_a_byte_at_a_time_ends_at_the_deadline(worker, method):
    worker.raw(method, "/connectors/c/offsets", HEAD + b"Content-Length: 500\r\n\r\n", drip=0.1)
    adapter = rest(worker, deadline=1.5)
    started = time.monotonic()
    with pytest.raises(ConnectUnreachable if method == "GET" else ConnectAnswerBroken) as error:
        adapter.offsets("c") if method == "GET" else adapter.alter_offsets("c", [])
    assert time.monotonic() - started < 3
    assert "did not finish its answer within 1.5 s" in error.value.message


def test_the_deadline_is_twice_the_read_timeout_unless_set():
    assert ConnectSettings(urls=("http://w",), timeout=10).call_deadline == 20
    assert ConnectSettings(urls=("http://w",), timeout=10, deadline=3).call_deadline == 3


@pytest.mark.parametrize("chunked", [False, True], ids=["until-close", "chunked"])
def test_an_endless_answer_stops_at_the_size_cap(worker, chunked):
    worker.endless("GET", "/connectors/c/offsets", chunked=chunked)
    started = time.monotonic()
    with pytest.raises(ConnectAnswerTooLarge, match="larger than the 32 MiB read"):
        rest(worker).offsets("c")
    assert time.monotonic() - started < 10
    assert tuning.CONNECT_ANSWER_MAX_BYTES == 32 * 2**20


def test_an_announced_huge_answer_is_refused_before_reading_it(worker):
    head = HEAD + b"Content-Length: 419430400\r\n\r\n"
    worker.raw("GET", "/connectors/c/offsets", head + b"[" * 2**20)
    with pytest.raises(ConnectAnswerTooLarge, match=r"announced an answer of 400\.0 MiB"):
        rest(worker, max_answer_bytes=2**20).offsets("c")


def test_an_error_answer_is_capped_too(worker):
    body = b'{"message": "' + b"x" * 2**20 + b'"}'
    worker.answer("PUT", "/connectors/c/stop", 500, body)
    with pytest.raises(ConnectAnswerTooLarge):
        rest(worker, max_answer_bytes=2**19).stop("c")


# --- Pages and API -----------------------------------------------------------------------------

PAGE_SHAPES = {
    "deep json": (200, DEEP),
    "deep json in a 500": (500, DEEP),
    "deep json in a 400": (400, DEEP),
    "cut body": None,
    "version of thousands of digits": (200, b'{"version": "' + b"9" * 5000 + b'.0"}'),
}


@pytest.mark.parametrize("shape", PAGE_SHAPES.values(), ids=PAGE_SHAPES.keys())
def test_the_worker_page_and_api_never_answer_500(client, user, worker, cluster, shape):
    if shape is None:
        worker.raw("GET", "/", BROKEN["cut body"])
    else:
        worker.answer("GET", "/", *shape)
    client.force_login(user)
    page = client.get("/clusters/c1/worker/")
    assert page.status_code == 200
    api = client.get("/api/v1/clusters/c1/worker/")
    assert api.status_code in (200, 502, 503), api.content[:300]


def test_a_stop_whose_status_poll_answers_garbage_is_audited_not_a_500(
    client, editor, worker, cluster
):
    worker.answer("PUT", "/connectors/src/stop", 202, b"")
    worker.answer("GET", "/connectors/src/status", 200, DEEP)
    client.force_login(editor)
    response = client.post("/api/v1/clusters/c1/connectors/src/stop/")
    assert response.status_code == 502 and NESTED_TOO_DEEP in response.json()["detail"]
    page = client.post("/clusters/c1/connectors/src/control/stop/", headers={"HX-Request": "true"})
    assert page.status_code == 502 and b'id="control-error"' in page.content
    assert AuditEvent.objects.filter(connector="src", action="control-failed").count() == 2


def test_a_stop_refused_with_deep_json_says_so_and_is_audited(client, editor, worker, cluster):
    worker.answer("PUT", "/connectors/src/stop", 500, DEEP)
    client.force_login(editor)
    response = client.post("/api/v1/clusters/c1/connectors/src/stop/")
    assert response.status_code == 502 and NESTED_TOO_DEEP in response.json()["detail"]
    page = client.post("/clusters/c1/connectors/src/control/stop/", headers={"HX-Request": "true"})
    assert page.status_code == 502 and NESTED_TOO_DEEP in html.unescape(page.content.decode())
    assert AuditEvent.objects.filter(connector="src", action="control-failed").count() == 2


@pytest.mark.parametrize("status", [200, 500])
def test_a_standalone_worker_listing_deep_json_leaves_its_file_s_connectors_shown(
    client, user, worker, tmp_path, caplog, status
):
    offsets_file = tmp_path / "connect.offsets"
    shutil.copy(STANDALONE_FIXTURES / "two-sources-one-reset.offsets", offsets_file)
    Cluster.objects.create(
        name="edge",
        kind=Cluster.Kind.STANDALONE,
        offsets_file=str(offsets_file),
        connect_url=worker.url,
    )
    worker.answer("GET", "/connectors?expand=status", status, DEEP)
    client.force_login(user)
    page = client.get("/clusters/edge/live/")
    assert page.status_code == 200 and "file-source" in page.content.decode()
    api = client.get("/api/v1/clusters/edge/state/")
    assert api.status_code == 200 and "file-source" in {row["name"] for row in api.json()}
    assert NESTED_TOO_DEEP in caplog.text  # the worker's part is logged, the file's shown


# --- Over TLS ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1: (certificate file, key file)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    request = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    subject = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run(
        [*request, "-keyout", str(key), "-out", str(cert), *subject],
        check=True,
        capture_output=True,
    )
    return str(cert), str(key)


def test_a_worker_over_tls_answers_and_its_redirects_and_drips_are_refused(certificate, elsewhere):
    with FakeWorker(tls=certificate) as worker:
        worker.answer("GET", "/", 200, VERSION)
        worker.redirect("GET", "/connectors/c/config", f"{elsewhere.url}/connectors/c/config")
        worker.raw("PATCH", "/connectors/c/offsets", HEAD + b"Content-Length: 99\r\n\r\n", drip=0.1)
        adapter = rest(worker, ca_file=certificate[0], deadline=1.5)
        assert adapter.worker_info().version == "3.7.0"
        with pytest.raises(ConnectRedirected):
            adapter.config("c")
        started = time.monotonic()
        with pytest.raises(ConnectAnswerBroken, match=r"within 1\.5 s"):
            adapter.alter_offsets("c", [])
        assert time.monotonic() - started < 3
    assert elsewhere.requests == []


def test_a_worker_certificate_not_trusted_is_a_setup_to_fix_not_a_worker_away(certificate):
    with FakeWorker(tls=certificate) as worker:
        worker.answer("GET", "/", 200, VERSION)
        # The system's CAs do not sign the worker's certificate.
        with pytest.raises(ConnectAuthFailed, match="certificate verify failed") as refused:
            rest(worker).worker_info()
    assert "check the cluster's Connect CA" in refused.value.message
    assert SECRET not in refused.value.message


# --- An open edit's page asks the worker how it would be written -------------------------------

EDIT_SHAPES = {
    "deep json": (200, DEEP, "did not answer"),
    "version of thousands of digits": (200, b'{"version": "' + b"9" * 5000 + b'.0"}', "runs"),
    "cut body": (None, BROKEN["cut body"], "cut its answer short"),
    "redirect": (None, b"", "redirects to"),
}


@pytest.mark.parametrize(("status", "body", "words"), EDIT_SHAPES.values(), ids=EDIT_SHAPES.keys())
def test_an_open_edits_page_and_route_say_what_the_worker_did_and_never_answer_500(
    client, editor, worker, elsewhere, cluster, status, body, words
):
    if status is not None:
        worker.answer("GET", "/", status, body)
    elif body:
        worker.raw("GET", "/", body)
    else:
        worker.redirect("GET", "/", f"{elsewhere.url}/")
    edit = make_edit(cluster, editor, state="approved")
    client.force_login(editor)
    page = client.get(f"/clusters/c1/edits/{edit.pk}/")
    assert page.status_code == 200 and words in page.content.decode()
    route = client.get(f"/api/v1/edits/{edit.pk}/route/")
    assert route.status_code == 200 and words in route.json()["reason"]
    assert elsewhere.requests == []
