"""Any name Connect can hold is reachable from every page and API route that lists it."""

import re
from html import unescape

import pytest

from tests.support import factories as make

# db_engine: names of any length and script are stored, filtered and ordered by the engine.
pytestmark = [pytest.mark.django_db, pytest.mark.db_engine]

# Empty, dot segments, separators, the encoding's own mark, control characters, query and
# fragment characters, commas (the export's list separator), spaces, non-ASCII, and the longest
# name the database keeps (longer ones are counted, not stored: test_refresh_garbage.py).
HOSTILE = [
    "",
    ".",
    "..",
    "a/b",
    "/",
    "a\\b",
    "~tilde",
    "tab\tname",
    "line\r\nbreak",
    "q?x=1#frag",
    "50%2F",
    "a,b",
    " spaced ",
    "café ☕",
    "<b>bold</b>",
    "x" * 249,
]


@pytest.fixture
def cluster():
    cluster = make.cluster("prod")
    make.run(cluster)
    make.snapshot(cluster, "plain-source", partitions=3)
    make.source_offsets(cluster, "plain-source", 3)
    for name in HOSTILE:
        make.snapshot(cluster, name, partitions=2)
        make.source_offsets(cluster, name, 2)
    return cluster


def test_the_connectors_list_links_every_name_to_its_own_page(logged_in_client, cluster):
    response = logged_in_client.get("/clusters/prod/connectors/?per_page=100")
    assert response.status_code == 200
    links = re.findall(r'<tr data-connector="[^"]*">\s*<td><a href="([^"]+)"', response.text)
    assert len(links) == len(HOSTILE) + 1
    reached = set()
    for link in links:
        page = logged_in_client.get(unescape(link))
        assert page.status_code == 200, link
        reached.add(page.context["connector"].name)
    assert reached == {*HOSTILE, "plain-source"}


@pytest.mark.parametrize("name", HOSTILE, ids=repr)
def test_every_api_route_answers_for_the_name(logged_in_client, cluster, name):
    listing = logged_in_client.get("/api/v1/clusters/prod/connectors/?page_size=100")
    assert listing.status_code == 200
    urls = {item["name"]: item["url"] for item in listing.json()["connectors"]}
    detail = logged_in_client.get(urls[name])
    assert detail.status_code == 200
    assert detail.json()["name"] == name
    for route in ("partitions/", "offsets/", "lag/", "history/"):
        assert logged_in_client.get(urls[name] + route).status_code == 200, route


@pytest.mark.parametrize("name", HOSTILE, ids=repr)
def test_the_connector_page_links_work_for_the_name(logged_in_client, cluster, name):
    page = logged_in_client.get("/clusters/prod/connectors/?per_page=100")
    link = dict(
        (unescape(connector), unescape(url))
        for connector, url in re.findall(
            r'<tr data-connector="([^"]*)">\s*<td><a href="([^"]+)"', page.text
        )
    )[name]
    connector = logged_in_client.get(link)
    export = re.search(r'href="([^"]+offsets\.json)"', connector.text).group(1)
    download = logged_in_client.get(unescape(export))
    assert download.status_code == 200
    assert download["Content-Disposition"].startswith("attachment; filename")
    assert "\r" not in download["Content-Disposition"]
    assert download.json()["offsets"] or download.json() == {"offsets": []}


def test_a_name_that_is_no_valid_encoding_is_a_404(logged_in_client, cluster):
    assert logged_in_client.get("/clusters/prod/connectors/~*/").status_code == 404
    assert logged_in_client.get("/api/v1/clusters/prod/connectors/~_w/").status_code == 404
