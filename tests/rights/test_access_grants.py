"""Rights per cluster: a user granted cluster A only never learns that cluster B exists.

The URL resolver is walked (tests/support/access.py): every route, with B's cluster, connector and edit
in its path, answers 404 (or 405 for a method the route never takes) to a user who holds every
role on A; every route that names no cluster leaves B out of its answer. The same walk over A's
names shows the routes do answer there, so the 404s are about B, not about the walk.
"""

import pytest
from django.contrib.auth.models import Group
from rest_framework.authtoken.models import Token

from offsets.models import AuditEvent, Grant, OffsetEdit, Role
from tests.support import factories
from tests.support.access import endpoints, sample_params
from tests.support.edits_factory import make_edit
from tests.support.users import user_with

pytestmark = pytest.mark.django_db

HIDDEN = "hidden-cluster-b"


@pytest.fixture
def two_clusters(django_user_model):
    author = user_with(django_user_model, "author", "stage_offsetedit")
    seen, hidden = factories.cluster("seen-cluster-a"), factories.cluster(HIDDEN)
    params = {}
    for cluster in (seen, hidden):
        factories.run(cluster)
        factories.snapshot(cluster, "file-src")
        edit = make_edit(cluster, author)
        params[cluster.name] = sample_params(
            cluster=cluster.name, connector="file-src", edit_pk=edit.pk, admin_pk=cluster.pk
        )
    return seen, hidden, params


@pytest.fixture
def a_only(django_user_model, two_clusters):
    """Every role, on cluster A only."""
    seen = two_clusters[0]
    team = Group.objects.create(name="team-a")
    for role in Role:
        Grant.objects.create(group=team, role=role, cluster=seen)
    user = django_user_model.objects.create_user("ana", password="ana-password")
    user.groups.add(team)
    return user


def _walk(client, params: dict, *, post: bool = True) -> dict[str, tuple]:
    """Each non-admin route's (GET, POST) answers, with the comment every POST form takes."""
    answers = {}
    for endpoint in endpoints(params):
        if endpoint.is_admin or endpoint.name in ("login", "logout", "metrics"):
            continue
        get = client.get(endpoint.url)
        answers[endpoint.url] = (get, client.post(endpoint.url, {"comment": "x"}) if post else None)
    return answers


def test_every_route_of_an_ungranted_cluster_answers_as_if_it_did_not_exist(
    client, two_clusters, a_only
):
    _, hidden, params = two_clusters
    client.force_login(a_only)
    leaks = []
    for url, (get, post) in _walk(client, params[HIDDEN]).items():
        for method, response in (("GET", get), ("POST", post)):
            body = response.content.decode(errors="replace")
            if HIDDEN in url:
                if response.status_code not in (404, 405):
                    leaks.append(f"{method} {url} -> {response.status_code}")
            elif HIDDEN in body:
                leaks.append(f"{method} {url} names {HIDDEN} ({response.status_code})")
    assert not leaks, "Cluster B shows through:\n" + "\n".join(leaks)
    # Nothing was done on B by the POSTs.
    assert not AuditEvent.objects.filter(cluster=hidden).exists()
    assert set(OffsetEdit.objects.filter(cluster=hidden).values_list("state", flat=True)) == {
        "draft"
    }


def test_the_same_routes_answer_on_the_granted_cluster(client, two_clusters, a_only, settings):
    # The cluster is unreachable (port 1): the pages that read it say so fast. Only GETs: a
    # POST on A would do what it says (start a refresh, stage an edit).
    settings.KAFKA_READ_TIMEOUT = 1
    seen, _, params = two_clusters
    client.force_login(a_only)
    answered = [
        url
        for url, (get, _) in _walk(client, params[seen.name], post=False).items()
        if seen.name in url and get.status_code == 200
    ]
    # The cluster's pages, a connector's, an edit's and the API's: the walk reached them.
    for path in ("/connectors/file-src/", "/edits/", "/api/v1/clusters/seen-cluster-a/"):
        assert any(path in url for url in answered), (path, answered)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/edits/?cluster=hidden-cluster-b",
        "/api/v1/edits/export/?cluster=hidden-cluster-b&connectors=file-src",
    ],
)
def test_an_api_query_naming_an_ungranted_cluster_is_404(client, two_clusters, a_only, path):
    token, _ = Token.objects.get_or_create(user=a_only)
    answer = client.get(path, headers={"Authorization": f"Token {token.key}"})
    assert answer.status_code == 404
    assert answer.json() == {"detail": "No cluster 'hidden-cluster-b'."}


def test_lists_without_a_cluster_leave_the_ungranted_one_out(client, two_clusters, a_only):
    seen, _, _ = two_clusters
    client.force_login(a_only)
    clusters = client.get("/api/v1/clusters/").json()
    assert [row["name"] for row in clusters] == [seen.name]
    edits = client.get("/api/v1/edits/").json()
    assert {row["cluster"] for row in edits} == {seen.name}
    assert HIDDEN not in client.get("/").content.decode()


def test_a_mirror_names_its_upstream_cluster_and_its_lag_only_to_a_user_who_sees_it(
    client, two_clusters, a_only, admin_user
):
    seen, _, _ = two_clusters
    mirror_class = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
    mirror_fields = {
        "connector_class": mirror_class,
        "config": {"connector.class": mirror_class, "source.cluster.alias": "east"},
        "mirrormaker2": True,
        "source_alias": "east",
        "lag_records": 4242,
        "lag_status": "ERR",
    }
    factories.snapshot(seen, "to-hidden", upstream_cluster=HIDDEN, **mirror_fields)
    factories.snapshot(seen, "to-seen", upstream_cluster=seen.name, **mirror_fields)
    seen_link = f'href="/clusters/{seen.name}/connectors/"'
    client.force_login(a_only)
    page = client.get(f"/clusters/{seen.name}/connectors/to-hidden/").content.decode()
    assert HIDDEN not in page and 'id="upstream-hidden"' in page
    assert "4,242" not in page and "4242" not in page
    listed = client.get(f"/clusters/{seen.name}/connectors/").content.decode()
    assert HIDDEN not in listed
    for path in ("", "lag/"):
        answer = client.get(f"/api/v1/clusters/{seen.name}/connectors/to-hidden/{path}").json()
        assert HIDDEN not in str(answer) and answer["lag_records"] is None, path
    rows = client.get(f"/api/v1/clusters/{seen.name}/connectors/").json()["connectors"]
    assert HIDDEN not in str(rows)
    assert {row["name"]: row["lag_records"] for row in rows}["to-seen"] == 4242
    page = client.get(f"/clusters/{seen.name}/connectors/to-seen/").content.decode()
    assert seen_link in page and 'id="upstream-hidden"' not in page
    # The fragments are cached per refresh: another user's answer is not served from them.
    client.force_login(admin_user)
    page = client.get(f"/clusters/{seen.name}/connectors/to-hidden/").content.decode()
    assert f'href="/clusters/{HIDDEN}/connectors/"' in page
    # An upstream no registered cluster is named so: shown, never linked (its page is a 404).
    factories.snapshot(seen, "to-gone", upstream_cluster="gone-cluster", **mirror_fields)
    page = client.get(f"/clusters/{seen.name}/connectors/to-gone/").content.decode()
    assert "gone-cluster" in page and 'href="/clusters/gone-cluster/' not in page


def test_a_user_without_any_grant_sees_no_cluster_and_whom_to_ask(
    client, two_clusters, django_user_model, settings
):
    settings.ACCESS_CONTACT = "#platform-kafka on chat"
    nobody = django_user_model.objects.create_user("newcomer", password="newcomer-password")
    client.force_login(nobody)
    home = client.get("/").content.decode()
    assert "seen-cluster-a" not in home and HIDDEN not in home
    assert "#platform-kafka on chat" in home
    assert client.get("/api/v1/clusters/").json() == []
    assert client.get("/clusters/seen-cluster-a/connectors/").status_code == 404


def test_a_superuser_sees_every_cluster(client, two_clusters, admin_user):
    client.force_login(admin_user)
    names = {row["name"] for row in client.get("/api/v1/clusters/").json()}
    assert names == {"seen-cluster-a", HIDDEN}
