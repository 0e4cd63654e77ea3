"""Request bodies the API cannot read answer 400 with the reason, whoever sends them."""

import pytest

from tests.support import factories

pytestmark = pytest.mark.django_db

DEEP = ("[" * 100_000 + "]" * 100_000).encode()
ROUTES = ["/api/v1/edits/", "/api/v1/edits/import/"]


@pytest.fixture
def cluster():
    return factories.cluster("c1")


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("who", ["user", "editor"])
def test_a_body_nested_100000_deep_is_a_400(client, cluster, request, route, who):
    client.force_login(request.getfixturevalue(who))
    response = client.post(route, DEEP, content_type="application/json")
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["detail"]


@pytest.mark.parametrize(
    "body,reason",
    [
        (b'{"cluster": "c1", "document": {"x": 1e400}}', "out of a double's range"),
        (b'{"cluster": "c1"} trailing', "Extra data"),
        (b'{"cluster": "\xff"}', "invalid UTF-8"),
        (b'{"cluster": NaN}', "NaN"),
    ],
)
def test_a_body_json_does_not_allow_is_a_400_naming_why(client, cluster, editor, body, reason):
    client.force_login(editor)
    response = client.post("/api/v1/edits/import/", body, content_type="application/json")
    assert response.status_code == 400
    assert reason in response.json()["detail"]
