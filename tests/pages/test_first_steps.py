"""What a new user meets first: a cluster's own URL leads to its connectors, /api/v1/ answers
an index of the API."""

import pytest
from django.contrib.auth.models import Group
from django.urls import resolve

from offsets.models import Grant, Role
from tests.support import factories as make

pytestmark = pytest.mark.django_db


@pytest.fixture
def prod():
    cluster = make.cluster("prod")
    make.run(cluster)
    make.snapshot(cluster, "jdbc-source")
    return cluster


def test_a_cluster_s_url_leads_to_its_connectors(logged_in_client, prod):
    response = logged_in_client.get("/clusters/prod/")
    assert response.status_code == 302
    assert response["Location"] == "/clusters/prod/connectors/"
    assert logged_in_client.get("/clusters/prod/", follow=True).status_code == 200


def test_an_unknown_cluster_s_url_answers_404(logged_in_client, prod):
    assert logged_in_client.get("/clusters/nope/").status_code == 404


def test_a_cluster_the_user_may_not_see_answers_as_an_unknown_one(client, prod, django_user_model):
    other = make.cluster("other")
    team = Group.objects.create(name="team-other")
    Grant.objects.create(group=team, role=Role.VIEWER, cluster=other)
    user = django_user_model.objects.create_user("ana", password="ana-password")
    user.groups.add(team)
    client.force_login(user)
    hidden, unknown = client.get("/clusters/prod/"), client.get("/clusters/nope/")
    assert hidden.status_code == unknown.status_code == 404
    assert client.get("/clusters/other/")["Location"] == "/clusters/other/connectors/"


def test_a_cluster_s_url_needs_a_login(client, prod):
    response = client.get("/clusters/prod/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_the_api_root_is_an_index_with_its_schema(logged_in_client):
    response = logged_in_client.get("/api/v1/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    body = response.json()
    root = "http://testserver/api/v1/"
    assert body["clusters"] == root + "clusters/"
    assert body["edits"] == root + "edits/"
    assert body["schema"] == root + "schema/"
    assert body["schema_json"] == root + "schema/?format=json"
    assert body["templates"]["connector"] == root + "clusters/{cluster}/connectors/{connector}/"
    # Every link of the index answers.
    for url in (body["clusters"], body["edits"], body["schema_json"]):
        assert logged_in_client.get(url).status_code == 200, url


def test_the_api_index_s_templates_lead_to_its_routes(logged_in_client):
    templates = logged_in_client.get("/api/v1/", HTTP_ACCEPT="application/json").json()
    for name, template in templates["templates"].items():
        url = template.format(cluster="prod", connector="jdbc-source").removeprefix(
            "http://testserver"
        )
        assert resolve(url).url_name.startswith("api-"), (name, url)


def test_the_api_index_needs_credentials(client):
    assert client.get("/api/v1/", HTTP_ACCEPT="application/json").status_code == 401


def test_the_api_index_is_in_the_schema(logged_in_client):
    schema = logged_in_client.get("/api/v1/schema/?format=json").json()
    assert "/api/v1/" in schema["paths"]


def test_an_unknown_url_is_the_product_s_404_saying_what_is_not_there(logged_in_client):
    response = logged_in_client.get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "There is nothing at <code>/no/such/page/</code>." in html
    assert "Resolver404" not in html
    assert '<link rel="icon" href="/static/img/favicon.svg" type="image/svg+xml">' in html
