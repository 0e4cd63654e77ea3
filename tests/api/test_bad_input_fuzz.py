"""Hypothesis-generated bad input to every form, serializer, upload and the import command.

Bodies of the wrong types, missing fields, huge and negative numbers, non-UTF-8 and non-JSON
uploads, JSON of the wrong shape. The answer is never a 500: a 400 that names the field (a
page: the form again, with its errors), a 403/404/409 where that is the truth, or a 2xx for
input that happened to be good. A 4xx changes nothing stored (edits, changes, audit log,
clusters, refresh runs are compared before and after).

The cluster is a small demo on a broker of its own, so that input that passes the forms goes
on into the services and the live reads, where the deeper mistakes are.
"""

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from offsets.formats import jackson
from offsets.models import AuditEvent, Cluster, OffsetEdit, OffsetEditChange, RefreshRun
from tests.support.edits_factory import make_edit

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

# One broker and database per test function; the examples share them on purpose (what they
# stage is part of the state the next one meets), so the health check is silenced.
fuzz = settings(
    database=None,
    deadline=None,
    max_examples=25,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

SOURCE = "file-source-app-logs"
SINK = "s3-sink-orders"
SOURCE_STRATEGIES = ["set", "add", "delete", "restore"]
SINK_STRATEGIES = [
    "earliest",
    "latest",
    "offset",
    "shift",
    "datetime",
    "duration",
    "copy-group",
    "delete-offsets",
]

# Text a browser or an HTTP client can send (no lone surrogates), NUL included.
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)
huge = st.integers(min_value=-(2**80), max_value=2**80)
primitives = st.none() | st.booleans() | huge | st.floats(allow_nan=False) | text
junk = st.recursive(
    primitives,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=8,
)
flat_maps = st.dictionaries(text, primitives, max_size=3)
iso_datetimes = st.datetimes().map(lambda d: d.isoformat()) | st.sampled_from(
    ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00", "1969-12-31T23:59:59Z"]
)
durations = st.sampled_from(["PT1H", "90m", "P99999999999W", "0s", "-1h", "P", "1e9d"]) | text


def stored() -> dict[str, list[dict]]:
    """Everything an input must not change unless it was accepted."""
    return {
        model.__name__: list(model.objects.order_by("pk").values())
        for model in (OffsetEdit, OffsetEditChange, AuditEvent, Cluster, RefreshRun)
    }


def check_api_answer(response, before: dict, fields: set[str]) -> None:
    assert response.status_code != 500, response.content[:2000]
    assert response.status_code in (200, 201, 400, 403, 404, 409), response.content[:2000]
    if response.status_code >= 400:
        assert stored() == before
    if response.status_code == 400:
        body = response.json()
        assert isinstance(body, dict) and body, body
        # A field's error under its name; a body that is not JSON at all under "detail".
        assert set(body) <= fields | {"non_field_errors", "detail"}, body


@pytest.fixture
def api(client, approver):
    client.force_login(approver)
    return client


# --- The API ----------------------------------------------------------------------------------

EDIT_FIELDS = {
    "cluster": st.sampled_from(["fresh", "nope"]) | junk,
    "connector": st.sampled_from([SOURCE, SINK, "nope"]) | junk,
    "strategy": st.sampled_from([*SOURCE_STRATEGIES, *SINK_STRATEGIES, "import"]) | junk,
    "partition": flat_maps | st.just({"filename": "/var/log/app/events.log"}) | junk,
    "offset": flat_maps | st.just({"position": 2**70}) | junk,
    "at": iso_datetimes | junk,
    "duration": durations | junk,
    "value": huge | junk,
    "group": text | junk,
    "partitions": st.lists(
        st.fixed_dictionaries({"topic": st.just("orders") | text, "partition": huge}),
        max_size=2,
    )
    | junk,
    "comment": text | junk,
}


@given(body=st.fixed_dictionaries({}, optional=EDIT_FIELDS) | junk)
@fuzz
def test_staging_over_the_api_answers_4xx_naming_the_field_never_500(fresh_demo, api, body):
    before = stored()
    response = api.post("/api/v1/edits/", json.dumps(body), content_type="application/json")
    check_api_answer(response, before, set(EDIT_FIELDS))


IMPORT_FIELDS = {
    "cluster": st.sampled_from(["fresh", "nope"]) | junk,
    "connector": st.sampled_from(["", SOURCE, SINK, "nope"]) | junk,
    "document": junk
    | st.fixed_dictionaries(
        {"offsets": st.lists(st.fixed_dictionaries({"partition": junk, "offset": junk}))}
    )
    | st.dictionaries(
        st.sampled_from([SOURCE, SINK, "nope"]) | text,
        st.lists(st.fixed_dictionaries({"partition": flat_maps, "offset": flat_maps | junk})),
        max_size=2,
    ),
    "dry_run": st.booleans() | junk,
    "comment": text | junk,
}


@given(body=st.fixed_dictionaries({}, optional=IMPORT_FIELDS) | junk)
# A KIP-199 connector named "0" once came back as the error key "0", like a list index.
@example(body={"cluster": "fresh", "document": {"0": None}})
@example(body={"cluster": "fresh", "document": {"cluster": []}})
@example(body={"cluster": "fresh", "connector": SOURCE, "document": {"offsets": [{}]}})
@fuzz
def test_importing_over_the_api_answers_4xx_naming_the_field_never_500(fresh_demo, api, body):
    before = stored()
    response = api.post("/api/v1/edits/import/", json.dumps(body), content_type="application/json")
    check_api_answer(response, before, set(IMPORT_FIELDS))


@given(
    raw=st.binary(max_size=200), content_type=st.sampled_from(["application/json", "text/plain"])
)
@fuzz
def test_a_body_that_is_not_json_answers_400_or_415(fresh_demo, api, raw, content_type):
    before = stored()
    for url in ("/api/v1/edits/", "/api/v1/edits/import/"):
        response = api.post(url, raw, content_type=content_type)
        assert response.status_code in (400, 415) or (
            # Bytes that happen to be JSON go on to the serializer.
            response.status_code in (200, 201, 403, 404)
        ), response.content[:2000]
        assert stored() == before or response.status_code in (200, 201)


@given(
    action=st.sampled_from(["submit", "approve", "reject", "cancel"]),
    body=st.fixed_dictionaries({}, optional={"comment": text | junk | st.text(min_size=5001)})
    | junk,
)
@fuzz
def test_review_actions_answer_4xx_naming_the_comment_never_500(
    fresh_demo, api, editor, action, body
):
    edit = make_edit(fresh_demo.cluster, editor, state="submitted")
    before = stored()
    response = api.post(
        f"/api/v1/edits/{edit.pk}/{action}/", json.dumps(body), content_type="application/json"
    )
    check_api_answer(response, before, {"comment"})


@given(
    params=st.fixed_dictionaries(
        {},
        optional={
            "cluster": st.sampled_from(["fresh", "nope"]) | text,
            "connectors": st.sampled_from([SOURCE, f"{SOURCE},{SINK}", "nope"]) | text,
            "shape": st.sampled_from(["kip875", "kip199"]) | text,
            "from_beginning": st.sampled_from(["true", "false"]) | text,
            "state": text,
            "connector": text,
        },
    )
)
@fuzz
def test_query_parameters_answer_4xx_naming_the_field_never_500(fresh_demo, api, params):
    fields = {"cluster", "connectors", "shape", "from_beginning", "state", "connector"}
    for url in ("/api/v1/edits/", "/api/v1/edits/export/"):
        before = stored()
        check_api_answer(api.get(url, params), before, fields)


LIST_PARAMS = {
    "q": text,
    "type": st.sampled_from(["source", "sink"]) | text,
    "state": text,
    "status": text,
    "sort": st.sampled_from(["name", "-lag", "partition", "-identity"]) | text,
    "page": st.integers(-(2**70), 2**70).map(str) | text,
    "page_size": st.integers(-(2**70), 2**70).map(str) | text,
    "partition": st.sampled_from(["0" * 40]) | text,
    "since": iso_datetimes | text,
}


@given(params=st.fixed_dictionaries({}, optional=LIST_PARAMS))
@fuzz
def test_connector_queries_answer_4xx_naming_the_field_never_500(fresh_demo, api, params):
    from tests.support.factories import snapshot

    if not fresh_demo.cluster.connectors.exists():
        snapshot(fresh_demo.cluster, SOURCE)
    before = stored()
    for url in (
        "/api/v1/clusters/fresh/connectors/",
        f"/api/v1/clusters/fresh/connectors/{SOURCE}/partitions/",
        f"/api/v1/clusters/fresh/connectors/{SOURCE}/history/",
    ):
        check_api_answer(api.get(url, params), before, set(LIST_PARAMS))


def _a_boolean_to_drf(value: object) -> bool:
    """Whether the API's BooleanField takes the value (it lower-cases strings: "TRUE", "Yes",
    "ON" are booleans, found in a fuzz run); asked of DRF itself so the test follows it."""
    try:
        serializers.BooleanField().run_validation(value)
    except serializers.ValidationError:
        return False
    return True


@given(full=junk.filter(lambda v: not _a_boolean_to_drf(v)))
@example(full=float("inf"))  # found in CI: json.dumps writes Infinity, which is not JSON
@fuzz
def test_a_refresh_with_a_bad_full_flag_answers_400_and_starts_nothing(
    fresh_demo, client, operator, full
):
    client.force_login(operator)
    before = stored()
    response = client.post(
        "/api/v1/clusters/fresh/refreshes/",
        json.dumps({"full": full}),
        content_type="application/json",
    )
    assert response.status_code == 400, response.content[:500]
    # Infinity (which json.dumps writes) is not JSON: the body itself is refused, under
    # "detail"; any JSON value that is not a boolean is refused under the field's name.
    assert set(response.json()) == ({"full"} if _strict_json(full) else {"detail"})
    assert stored() == before


def _strict_json(value: object) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


# --- The pages --------------------------------------------------------------------------------

form_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
SOURCE_FORM = {
    "strategy": st.sampled_from(SOURCE_STRATEGIES) | form_text,
    "existing": st.just('{"filename":"/var/log/app/events.log"}') | form_text,
    "partition": flat_maps.map(lambda m: json.dumps(m, allow_nan=True)) | form_text,
    "offset": st.sampled_from(['{"position":-1}', '{"position":1e400}', "[]", "{}", "{"])
    | flat_maps.map(lambda m: json.dumps(m, allow_nan=True))
    | form_text,
    "at": iso_datetimes | form_text,
    "comment": form_text,
}
SINK_FORM = {
    "strategy": st.sampled_from(SINK_STRATEGIES) | form_text,
    "partitions": st.lists(st.sampled_from(["orders/0", "orders/99"]) | form_text, max_size=2),
    "value": huge.map(str) | form_text,
    "at": iso_datetimes | form_text,
    "duration": durations,
    "group": form_text,
    "comment": form_text,
}


def check_page_answer(response, before: dict) -> None:
    assert response.status_code != 500
    assert response.status_code in (200, 302, 400, 404), response.status_code
    if response.status_code == 400:
        # The form comes back with its errors, and nothing was stored.
        form = response.context["form"]
        assert form.errors, "a 400 without a form error"
        assert b'class="errorlist' in response.content
        assert stored() == before


@given(connector=st.sampled_from([SOURCE, SINK]), data=st.data())
@fuzz
def test_the_stage_forms_answer_400_with_the_field_error_never_500(
    fresh_demo, client, approver, connector, data
):
    client.force_login(approver)
    fields = SOURCE_FORM if connector == SOURCE else SINK_FORM
    body = data.draw(st.fixed_dictionaries({}, optional=fields))
    before = stored()
    response = client.post(f"/clusters/fresh/connectors/{connector}/edits/", body)
    check_page_answer(response, before)


uploads = (
    st.binary(max_size=300)
    | junk.map(lambda v: jackson.dumps(v) if _dumpable(v) else b"{}")
    | st.sampled_from(
        [
            b"\xff\xfe{}",
            b'{"offsets":[{"partition":{"a":1}}]}',
            b'{"offsets":[{"partition":{"kafka_topic":"orders","kafka_partition":-1},'
            b'"offset":{"kafka_offset":5}}]}',
            f'{{"{SOURCE}":[{{"partition":{{"filename":"/x"}},"offset":{{"position":1e400}}}}]}}'.encode(),
            f'{{"{SINK}":[{{"partition":{{"kafka_topic":"orders","kafka_partition":0}},'
            f'"offset":{{"kafka_offset":{2**64}}}}}]}}'.encode(),
            b"[" * 50_000,
        ]
    )
)


def _dumpable(value: object) -> bool:
    try:
        jackson.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


@given(
    upload=st.none() | uploads,
    connector=st.sampled_from(["", SOURCE, SINK, "nope"]) | form_text,
    dry_run=st.sampled_from(["on", ""]),
)
@fuzz
def test_the_import_page_answers_400_with_the_error_never_500(
    fresh_demo, client, approver, upload, connector, dry_run
):
    client.force_login(approver)
    body = {"connector": connector, "dry_run": dry_run, "comment": "fuzz"}
    if upload is not None:
        body["file"] = SimpleUploadedFile("offsets.json", upload, "application/json")
    before = stored()
    response = client.post("/clusters/fresh/import/", body)
    check_page_answer(response, before)


@given(upload=uploads, connector=st.sampled_from(["", SOURCE, SINK, "nope"]))
@fuzz
def test_the_import_command_fails_with_a_message_never_a_traceback(
    fresh_demo, approver, tmp_path, upload, connector
):
    path = tmp_path / "offsets.json"
    path.write_bytes(upload)
    before = stored()
    try:
        call_command(
            "import_offsets",
            cluster="fresh",
            file=str(path),
            connector=connector,
            user=approver.username,
            stdout=io.StringIO(),
        )
    except CommandError as exc:
        assert str(exc).startswith("Nothing was staged"), exc
        assert stored() == before


PAGE_PARAMS = {
    name: form_text
    for name in ("q", "type", "state", "status", "sort", "partition", "connectors", "format")
} | {"page": huge.map(str) | form_text, "from_beginning": st.sampled_from(["on", ""])}


@given(params=st.fixed_dictionaries({}, optional=PAGE_PARAMS))
@fuzz
def test_page_queries_never_answer_500(fresh_demo, client, user, params):
    from tests.support.factories import snapshot

    if not fresh_demo.cluster.connectors.exists():
        snapshot(fresh_demo.cluster, SOURCE)
    client.force_login(user)
    for url in (
        "/clusters/fresh/connectors/",
        f"/clusters/fresh/connectors/{SOURCE}/",
        "/clusters/fresh/edits/",
        "/clusters/fresh/export/",
    ):
        response = client.get(url, params)
        assert response.status_code in (200, 400, 404), (url, response.status_code)


# Otherwise good bodies with one extreme value: these reach the services and Kafka, where
# random bodies rarely get to.
SINK_BODY = {"cluster": "fresh", "connector": SINK}
SOURCE_BODY = {"cluster": "fresh", "connector": SOURCE}
PARTITION = {"filename": "/var/log/app/events.log"}


@pytest.mark.parametrize(
    "body",
    [
        {**SINK_BODY, "strategy": "offset", "value": 2**63},
        {**SINK_BODY, "strategy": "offset", "value": -1},
        {**SINK_BODY, "strategy": "offset", "value": 2**80},
        {**SINK_BODY, "strategy": "shift", "value": -(2**80)},
        {**SINK_BODY, "strategy": "shift", "value": 2**80},
        {
            **SINK_BODY,
            "strategy": "earliest",
            "partitions": [{"topic": "orders", "partition": 2**31}],
        },
        {
            **SINK_BODY,
            "strategy": "earliest",
            "partitions": [{"topic": "orders", "partition": 2**80}],
        },
        {**SINK_BODY, "strategy": "earliest", "partitions": [{"topic": "x" * 300, "partition": 0}]},
        {**SINK_BODY, "strategy": "earliest", "partitions": [{"topic": "", "partition": 0}]},
        {**SINK_BODY, "strategy": "datetime", "at": "9999-12-31T23:59:59-05:00"},
        {**SINK_BODY, "strategy": "datetime", "at": "0001-01-01T00:00:00+05:00"},
        {**SINK_BODY, "strategy": "datetime", "at": "1900-01-01T00:00:00Z"},
        {**SINK_BODY, "strategy": "duration", "duration": "P99999999999W"},
        {**SINK_BODY, "strategy": "duration", "duration": "P36000D"},
        {**SINK_BODY, "strategy": "copy-group", "group": ""},
        {**SINK_BODY, "strategy": "copy-group", "group": "\x00"},
        {**SINK_BODY, "strategy": "copy-group", "group": "g" * 300},
        {**SOURCE_BODY, "strategy": "add", "partition": {"f": 2**70}, "offset": {"p": 1}},
        {**SOURCE_BODY, "strategy": "set", "partition": PARTITION, "offset": {"position": 2**64}},
        {**SOURCE_BODY, "strategy": "set", "partition": PARTITION, "offset": {"position": -1}},
        {**SOURCE_BODY, "strategy": "set", "partition": PARTITION, "offset": {"p": 1e308}},
        {**SOURCE_BODY, "strategy": "add", "partition": {"\x00": "\x00"}, "offset": {"p": 1}},
        {**SOURCE_BODY, "strategy": "add", "partition": {"k": "\ud800"}, "offset": {"p": 1}},
        {**SOURCE_BODY, "strategy": "restore", "at": "0001-01-01T00:00:00+05:00"},
        {**SOURCE_BODY, "strategy": "restore", "at": "9999-12-31T23:59:59-05:00"},
        {
            **SOURCE_BODY,
            "strategy": "set",
            "partition": PARTITION,
            "offset": {"p": 1},
            "comment": "x" * 100_000,
        },
    ],
)
def test_extreme_values_in_good_bodies_answer_4xx_or_stage_never_500(fresh_demo, api, body):
    before = stored()
    response = api.post("/api/v1/edits/", json.dumps(body), content_type="application/json")
    check_api_answer(response, before, set(EDIT_FIELDS))
