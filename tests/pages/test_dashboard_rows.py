"""Cached rows keep a hole for each time: the ages are written when the page is served."""

import pickle
from datetime import UTC, datetime, timedelta

from django.http import QueryDict
from django.template import engines

from dashboard.pages.formatting import NEVER, AgedHtml
from dashboard.templatetags.dashboard_tags import query_string

COMMIT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_it_writes_each_time_as_an_age_against_the_time_given():
    html = AgedHtml(["<td>", COMMIT, "</td><td>", NEVER, "</td>"])
    early = html.render(COMMIT + timedelta(seconds=65))
    late = html.render(COMMIT + timedelta(hours=2, minutes=3))
    title = 'title="2026-01-02 03:04:05 UTC"'
    assert early == f"<td><span {title}>1m 05s ago</span></td><td>{NEVER}</td>"
    assert late == f"<td><span {title}>2h 03m ago</span></td><td>{NEVER}</td>"


def test_it_joins_adjacent_text_once_and_survives_the_cache():
    html = AgedHtml(["<tr>", "<td>", COMMIT, "</td>", "</tr>"])
    assert html.parts == ("<tr><td>", COMMIT, "</td></tr>")
    copy = pickle.loads(pickle.dumps(html))
    now = COMMIT + timedelta(minutes=1)
    assert copy.render(now) == html.render(now)


def test_a_rendered_template_keeps_a_hole_where_it_wrote_a_time():
    template = engines["django"].from_string(
        "{% load dashboard_tags %}<td>{% age_hole at %}</td><td>{% age_hole none %}</td>"
    )
    html = AgedHtml.from_html(template.render({"at": COMMIT, "none": None}))
    assert html.parts == ("<td>", COMMIT, f"</td><td>{NEVER}</td>")
    assert pickle.loads(pickle.dumps(html)).parts == html.parts


def test_a_value_that_looks_like_a_hole_stays_text():
    template = engines["django"].from_string("<td>{{ name }}</td>")
    name = f"<!--age {COMMIT.isoformat()}-->"
    html = AgedHtml.from_html(template.render({"name": name}))
    assert html.parts == ("<td>&lt;!--age 2026-01-02T03:04:05+00:00--&gt;</td>",)


def test_query_strings_keep_the_other_parameters_in_their_order():
    parameters = QueryDict("q=a+b&page=3&sort=name&type=sink&type=source")
    # What QueryDict.copy(), assignments and urlencode() gave.
    assert query_string(parameters, page=None, sort="-name") == (
        "?q=a+b&sort=-name&type=sink&type=source"
    )
    assert query_string(QueryDict("q=x"), page=None, sort="lag") == "?q=x&sort=lag"
    assert query_string(parameters, page="4") == "?q=a+b&page=4&sort=name&type=sink&type=source"
    assert query_string(QueryDict(""), page="2") == "?page=2"
