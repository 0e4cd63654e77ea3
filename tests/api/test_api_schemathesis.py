"""schemathesis against the OpenAPI schema the app serves at /api/v1/schema/.

Every operation of the schema gets generated requests (valid and invalid parameters and
bodies), sent in process through the WSGI app with a token of a user who holds every role, on
the demo cluster after two real refreshes (so lists, partitions, history, live state and
exports have data to show). The responses must not be server errors and must conform to the
schema: status codes, content types, bodies.

Path parameters are mostly pointed at things that exist (the demo cluster, its connectors, an
edit), otherwise almost every request would stop at a 404.
"""

import json

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.urls import Resolver404, resolve
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import ignored_auth, positive_data_acceptance

from tests.support.edits_factory import make_edit

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

CONNECTORS = [
    "jdbc-source-inventory",
    "file-source-app-logs",
    "orders-cdc-eos",
    "s3-sink-orders",
    "es-sink-clicks",
]


@pytest.fixture
def all_roles(approver):
    from offsets.rights.roles import REFRESHERS_GROUP, ensure_role_groups

    approver.groups.add(ensure_role_groups()[REFRESHERS_GROUP])
    return approver


@pytest.fixture
def token(all_roles) -> str:
    return Token.objects.create(user=all_roles).key


@pytest.fixture
def edit_pk(refreshed_demo, editor) -> int:
    """A pending edit (another user's, so that the approver may approve or reject it)."""
    return make_edit(refreshed_demo, editor, state="submitted", connector="file-source-app-logs").pk


@pytest.fixture
def wsgi_app():
    """Django's WSGI app, kept from closing the test's database connection.

    Django's own test client does the same: after each request the WSGI handler closes
    "old" connections, which would close the connection holding the test's transaction.
    """
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def generated_schema() -> dict:
    """The schema exactly as /api/v1/schema/?format=json serves it (same generator, same
    renderer); built at import so that schemathesis can parametrize the tests with it.

    (schemathesis.pytest.from_fixture would load it from the running app instead, but its
    lazy loader sets `Function._nodeid`, which pytest 9 no longer has.)
    """
    generator = SchemaGenerator()
    return json.loads(OpenApiJsonRenderer().render(generator.get_schema(request=None, public=True)))


SCHEMA = generated_schema()
schema = (
    schemathesis.openapi.from_dict(SCHEMA)
    # Applying writes offsets to the session's shared demo broker, and starting a refresh
    # spawns a refresh_offsets process: neither may run on generated input here. Their bad
    # bodies are covered by test_bad_input_fuzz.py and by the test at the end of this file.
    .exclude(path_regex=r"/apply/$")
    .exclude(path_regex=r"/refreshes/$", method="POST")
)


def test_the_app_serves_the_schema_the_tests_use(client, user):
    client.force_login(user)
    response = client.get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    assert response.json() == SCHEMA


def aim(case, edit_pk: int) -> None:
    """Point most generated path parameters at existing objects (a few stay random: 404s)."""
    params = dict(case.path_parameters or {})
    seed = sum(map(ord, str(params)))
    if seed % 5 == 0:
        return
    if case.meta is not None and case.meta.is_negative_at(ParameterLocation.PATH):
        # A path generated invalid stays so: made valid here, schemathesis would still count
        # it as invalid data and expect the answer to refuse it.
        return
    if "cluster_name" in params:
        params["cluster_name"] = "demo"
    if "connector_name" in params:
        params["connector_name"] = CONNECTORS[seed % len(CONNECTORS)]
    if "id" in params:  # drf-spectacular names an <int:pk> path parameter "id"
        params["id"] = edit_pk
    case.path_parameters = params


@schema.parametrize()
@settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_answers_every_generated_request_as_its_schema_says(
    case, refreshed_demo, token, edit_pk, wsgi_app
):
    aim(case, edit_pk)
    # Two checks are left out, each for a reason:
    # - ignored_auth sends a generated session cookie NEXT TO the valid token, and DRF rightly
    #   accepts the token. Instead, the same request without the token must be refused below.
    # - positive_data_acceptance expects every schema-valid body to be accepted, but staging has
    #   cross-field rules an OpenAPI schema cannot state (strategy "set" needs a partition and an
    #   offset, a KIP-875 export exactly one connector); those answer 400 naming the field.
    #   negative_data_rejection, the other direction, stays on.
    case.call_and_validate(
        app=wsgi_app,
        headers={"Authorization": f"Token {token}"},
        excluded_checks=[ignored_auth, positive_data_acceptance],
    )
    refused = case.call(app=wsgi_app)
    # Two 404s come before the login check: a path that no URL pattern matches (an {id} that
    # is not a number), and an unknown ?format= (DRF picks the renderer first).
    unrouted = not _routed(case.formatted_path)
    bad_format = "format" in (case.query or {})
    # Without credentials: 401 (the token scheme's WWW-Authenticate), never an answer.
    assert refused.status_code == 401 or (
        refused.status_code == 404 and (unrouted or bad_format)
    ), refused.status_code


def _routed(path: str) -> bool:
    try:
        resolve(path)
    except Resolver404:
        return False
    return True


def test_bad_bodies_to_the_excluded_write_endpoints_answer_400(
    refreshed_demo, client, all_roles, edit_pk
):
    client.force_login(all_roles)
    response = client.post(
        f"/api/v1/edits/{edit_pk}/apply/",
        {"comment": ["not", "text"]},
        content_type="application/json",
    )
    assert response.status_code == 400 and set(response.json()) == {"comment"}
    response = client.post(
        "/api/v1/clusters/demo/refreshes/", {"full": {"no": 1}}, content_type="application/json"
    )
    assert response.status_code == 400 and set(response.json()) == {"full"}


def test_an_unknown_api_url_answers_json_and_a_page_url_the_page(logged_in_client):
    response = logged_in_client.get("/api/v1/edits/not-a-number/")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}
    response = logged_in_client.get("/no/such/page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")
