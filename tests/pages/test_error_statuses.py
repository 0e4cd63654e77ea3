"""What each page and API route answers when a service raises: the status and the exact words.

The services are replaced by stubs that raise, so every error reaches every view that catches
it without a broker or a worker; the real failures are tested beside each feature.
"""

import pytest

from dashboard.pages.edits import import_export as import_export_views
from dashboard.pages.edits import removal as removal_views
from dashboard.pages.edits import views as edit_views
from offsets.edits.errors import (
    ConnectorNotFound,
    DocumentInputError,
    EditForbidden,
    EditInputError,
    EditStateConflict,
)
from offsets.kafka.connect_rest import (
    ConnectAuthFailed,
    ConnectNotConfigured,
    ConnectNotJson,
    ConnectorUnknown,
    ConnectRebalancing,
    ConnectRestError,
    ConnectServerError,
    ConnectUnreachable,
)
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound
from offsets.models import Cluster
from tests.support import factories
from tests.support.edits_factory import make_edit

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}

# Each error, the status it answers with, and the words a page puts before it (if any).
EDIT_ERRORS = [
    (EditInputError("said no"), 400),
    (EditForbidden("said no"), 403),
    (ConnectorNotFound("said no"), 404),
    (EditStateConflict("said no"), 409),
]
KAFKA_ERRORS = [(KafkaUnavailable("said no"), 503), (TopicNotFound("said no"), 503)]
WORKER_ERRORS = [
    (ConnectorUnknown("said no", status=404), 404),
    (ConnectNotConfigured("said no"), 409),
    (ConnectRebalancing("said no", status=409), 409),
    (ConnectUnreachable("said no"), 503),
    (ConnectAuthFailed("said no", status=401), 502),
    (ConnectNotJson("said no"), 502),
    (ConnectServerError("said no", status=500), 502),
]


def raising(exc: Exception):
    def service(**kwargs):
        raise exc

    return service


def ids(cases):
    return [type(exc).__name__ for exc, _ in cases]


@pytest.fixture
def cluster():
    return factories.cluster("c1")


# --- Pages ----------------------------------------------------------------------------------


def _prefixed(exc: Exception, kafka: str, worker: str) -> str:
    if isinstance(exc, (KafkaUnavailable, TopicNotFound)):
        return f"{kafka}: said no" if kafka else "said no"
    if isinstance(exc, ConnectRestError):
        return f"{worker}: said no" if worker else "said no"
    return "said no"


@pytest.mark.parametrize(
    ("exc", "status"),
    EDIT_ERRORS + KAFKA_ERRORS + WORKER_ERRORS,
    ids=ids(EDIT_ERRORS + KAFKA_ERRORS + WORKER_ERRORS),
)
def test_an_edit_action_answers_each_error_in_place(
    client, monkeypatch, cluster, editor, exc, status
):
    edit = make_edit(cluster, editor)
    monkeypatch.setitem(edit_views.ACTIONS, "submit", raising(exc))
    client.force_login(editor)
    response = client.post(f"/clusters/c1/edits/{edit.pk}/submit/", headers=HTMX)
    message = _prefixed(exc, "The cluster could not be reached", "The Connect worker")
    assert response.status_code == status
    assert f'id="action-error">{message}</p>' in response.content.decode()


@pytest.mark.parametrize(
    ("exc", "status"), EDIT_ERRORS + KAFKA_ERRORS, ids=ids(EDIT_ERRORS + KAFKA_ERRORS)
)
def test_a_removal_staging_answers_each_error_in_place(
    client, monkeypatch, cluster, editor, exc, status
):
    monkeypatch.setattr(removal_views.workflow, "stage", raising(exc))
    client.force_login(editor)
    response = client.post("/clusters/c1/connectors/x/remove/delete/", headers=HTMX)
    message = _prefixed(exc, "The cluster could not be reached", "")
    assert response.status_code == status
    assert f'id="removal-error">{message}</p>' in response.content.decode()


@pytest.fixture
def two_clusters(cluster):
    Cluster.objects.create(name="b", bootstrap_servers="127.0.0.1:1", connect_url="http://w:1")
    return cluster


@pytest.mark.parametrize(
    ("exc", "status"),
    EDIT_ERRORS + KAFKA_ERRORS + WORKER_ERRORS,
    ids=ids(EDIT_ERRORS + KAFKA_ERRORS + WORKER_ERRORS),
)
def test_a_move_staging_answers_each_error_on_its_page(
    client, monkeypatch, two_clusters, editor, exc, status
):
    monkeypatch.setattr("dashboard.pages.edits.moves.source_config", lambda **kw: {"k": "v"})
    monkeypatch.setattr("dashboard.pages.edits.moves.stage", raising(exc))
    client.force_login(editor)
    response = client.post("/clusters/c1/connectors/x/move/", {"target": "b"})
    assert response.status_code == status
    if isinstance(exc, EditForbidden):
        return  # the 403 page: Django's handler, not the move page
    message = _prefixed(exc, "A cluster could not be read", "The Connect worker of b")
    assert f'id="move-error">{message}</p>' in response.content.decode()


@pytest.mark.parametrize(
    ("exc", "get_status", "post_status", "message"),
    [
        (ConnectorNotFound("said no"), 404, 404, "said no"),
        (EditStateConflict("said no"), 200, 409, "said no"),
        (KafkaUnavailable("said no"), 503, 503, "The cluster could not be read: said no"),
        (TopicNotFound("said no"), 503, 503, "The cluster could not be read: said no"),
    ],
)
def test_the_move_page_says_why_the_connector_cannot_be_read_or_moved(
    client, monkeypatch, two_clusters, editor, exc, get_status, post_status, message
):
    monkeypatch.setattr("dashboard.pages.edits.moves.source_config", raising(exc))
    client.force_login(editor)
    url = "/clusters/c1/connectors/x/move/"
    for response, status in ((client.get(url), get_status), (client.post(url), post_status)):
        assert response.status_code == status
        assert f'id="move-error">{message}</p>' in response.content.decode()


@pytest.mark.parametrize(
    ("exc", "status"),
    [(EditForbidden("said no"), 403), *WORKER_ERRORS],
    ids=ids([(EditForbidden("said no"), 403), *WORKER_ERRORS]),
)
def test_the_connector_control_card_answers_each_error(
    client, monkeypatch, cluster, editor, exc, status
):
    monkeypatch.setattr("dashboard.pages.connector.control.control_connector", raising(exc))
    client.force_login(editor)
    response = client.post("/clusters/c1/connectors/x/control/stop/", headers=HTMX)
    assert response.status_code == status
    if not isinstance(exc, EditForbidden):
        assert 'id="control-error">said no</p>' in response.content.decode()


@pytest.mark.parametrize(("exc", "status"), KAFKA_ERRORS, ids=ids(KAFKA_ERRORS))
def test_a_connectors_edit_page_and_the_export_say_kafka_is_down(
    client, monkeypatch, cluster, editor, exc, status
):
    monkeypatch.setattr("dashboard.pages.edits.views.current_offsets", raising(exc))
    monkeypatch.setattr(import_export_views.offsets_export, "export_connector", raising(exc))
    client.force_login(editor)
    page = client.get("/clusters/c1/connectors/x/edits/")
    assert page.status_code == status and "said no" in page.content.decode()
    export = client.get("/clusters/c1/export/?connectors=x")
    assert export.status_code == status and export.json() == {"error": "said no"}


def test_a_connectors_edit_page_and_the_export_404_an_unknown_connector(
    client, monkeypatch, cluster, editor
):
    monkeypatch.setattr(
        "dashboard.pages.edits.views.current_offsets", raising(ConnectorNotFound("gone"))
    )
    monkeypatch.setattr(
        import_export_views.offsets_export, "export_connector", raising(ConnectorNotFound("gone"))
    )
    client.force_login(editor)
    for url in ("/clusters/c1/connectors/x/edits/", "/clusters/c1/export/?connectors=x"):
        response = client.get(url)
        assert response.status_code == 404 and "gone" in response.content.decode()


@pytest.mark.parametrize(("exc", "status"), KAFKA_ERRORS, ids=ids(KAFKA_ERRORS))
def test_the_live_state_page_says_kafka_is_down(client, monkeypatch, cluster, user, exc, status):
    monkeypatch.setattr(
        "dashboard.pages.clusters.views.connect_state.read_connect_state", raising(exc)
    )
    client.force_login(user)
    response = client.get("/clusters/c1/live/")
    assert response.status_code == status and "said no" in response.content.decode()


@pytest.mark.parametrize(
    "url",
    [
        "/clusters/nope/connectors/",
        "/clusters/nope/live/",
        "/clusters/nope/edits/",
        "/clusters/nope/orphans/",
        "/clusters/nope/worker/",
        "/clusters/nope/connectors/x/move/",
    ],
)
def test_the_pages_404_an_unknown_cluster_with_djangos_words(client, editor, url):
    client.force_login(editor)
    response = client.get(url)
    assert response.status_code == 404
    assert "No Cluster matches the given query." in response.content.decode()


# --- API ------------------------------------------------------------------------------------


def _detail(response) -> str:
    return response.json()["detail"]


@pytest.mark.parametrize(
    ("exc", "status"),
    [(EditForbidden("said no"), 403), *WORKER_ERRORS],
    ids=ids([(EditForbidden("said no"), 403), *WORKER_ERRORS]),
)
def test_the_control_api_answers_each_error(client, monkeypatch, cluster, editor, exc, status):
    monkeypatch.setattr("offsets.api.connector_control.control_connector", raising(exc))
    client.force_login(editor)
    response = client.post("/api/v1/clusters/c1/connectors/x/stop/")
    assert response.status_code == status and response.json() == {"detail": "said no"}


@pytest.mark.parametrize(
    ("exc", "status"),
    EDIT_ERRORS[1:] + KAFKA_ERRORS,
    ids=ids(EDIT_ERRORS[1:] + KAFKA_ERRORS),
)
def test_the_removal_api_answers_each_error(client, monkeypatch, cluster, editor, exc, status):
    monkeypatch.setattr("offsets.api.removal.stage", raising(exc))
    client.force_login(editor)
    response = client.post("/api/v1/clusters/c1/connectors/x/delete/", {}, "application/json")
    assert response.status_code == status and response.json() == {"detail": "said no"}


@pytest.mark.parametrize(
    ("exc", "body"),
    [
        (EditInputError("said no"), {"non_field_errors": ["said no"]}),
        (EditInputError("said no", field="comment"), {"comment": ["said no"]}),
        (DocumentInputError("said no", field="document"), {"document": ["said no"]}),
        (
            DocumentInputError("said no", field="a[0].partition"),
            {"document": {"a[0].partition": ["said no"]}},
        ),
    ],
)
def test_the_api_answers_bad_input_by_its_field(client, monkeypatch, cluster, editor, exc, body):
    monkeypatch.setattr("offsets.api.removal.stage", raising(exc))
    client.force_login(editor)
    response = client.post("/api/v1/clusters/c1/connectors/x/delete/", {}, "application/json")
    assert response.status_code == 400 and response.json() == body


@pytest.mark.parametrize(
    ("exc", "status"),
    EDIT_ERRORS[1:] + KAFKA_ERRORS + WORKER_ERRORS,
    ids=ids(EDIT_ERRORS[1:] + KAFKA_ERRORS + WORKER_ERRORS),
)
def test_the_move_api_answers_each_error(client, monkeypatch, two_clusters, editor, exc, status):
    monkeypatch.setattr("offsets.api.moves.stage", raising(exc))
    client.force_login(editor)
    response = client.post(
        "/api/v1/clusters/c1/connectors/x/move/", {"target": "b"}, content_type="application/json"
    )
    assert response.status_code == status and response.json() == {"detail": "said no"}


@pytest.mark.parametrize(("exc", "status"), KAFKA_ERRORS, ids=ids(KAFKA_ERRORS))
def test_the_connector_state_api_says_kafka_is_down(
    client, monkeypatch, cluster, user, exc, status
):
    monkeypatch.setattr("offsets.api.clusters.connect_state.read_connect_state", raising(exc))
    client.force_login(user)
    response = client.get("/api/v1/clusters/c1/state/")
    assert response.status_code == status and response.json() == {"detail": "said no"}


@pytest.mark.parametrize(
    ("url", "method", "detail"),
    [
        ("/api/v1/clusters/nope/state/", "get", "No Cluster matches the given query."),
        ("/api/v1/clusters/nope/orphans/", "get", "No cluster 'nope'."),
        ("/api/v1/clusters/nope/worker/", "get", "No cluster 'nope'."),
        ("/api/v1/clusters/nope/connectors/x/stop/", "post", "No cluster 'nope'."),
        ("/api/v1/clusters/nope/connectors/x/delete/", "post", "No cluster 'nope'."),
        ("/api/v1/edits/?cluster=nope", "get", "No cluster 'nope'."),
    ],
)
def test_the_api_404s_an_unknown_cluster_with_todays_words(client, editor, url, method, detail):
    client.force_login(editor)
    response = getattr(client, method)(url)
    assert response.status_code == 404 and _detail(response) == detail
