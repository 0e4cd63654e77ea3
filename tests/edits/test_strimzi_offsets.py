"""Strimzi offsets ConfigMaps in the pages, the API and the commands: export, import, bad input."""

import io
import json
import re

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from offsets.formats import strimzi
from offsets.models import AuditEvent, OffsetEdit
from tests.support import factories
from tests.support.edits_factory import make_edit

pytestmark = pytest.mark.django_db

NOT_A_CONFIGMAP = b"apiVersion: v1\nkind: Secret\ndata:\n  offsets.json: '{\"offsets\": []}'\n"
NO_KEY = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  other: '1'\n"
NO_CONNECTOR = b"apiVersion: v1\nkind: ConfigMap\ndata:\n  offsets.json: '{\"offsets\": []}'\n"
NEITHER = b"hello: [unclosed"


@pytest.fixture
def cluster():
    return factories.cluster("c1")


def assert_nothing_changed(before: list[int]) -> None:
    assert list(OffsetEdit.objects.values_list("pk", flat=True)) == before
    assert not AuditEvent.objects.exists()


# --- Bad input, before any broker is asked ------------------------------------------------


@pytest.mark.parametrize(
    ("upload", "message"),
    [
        (NOT_A_CONFIGMAP, "kind: must be ConfigMap, not &#x27;Secret&#x27;"),
        (NO_KEY, "data[&quot;offsets.json&quot;]: is required"),
        (NO_CONNECTOR, "does not name its connector"),
        (NEITHER, "neither JSON"),
        (b"a: &x [1]\nb: *x\nkind: ConfigMap\n", "anchors and aliases are not accepted"),
    ],
)
def test_the_import_page_names_what_is_wrong_with_a_configmap_and_keeps_everything(
    client, cluster, editor, upload, message
):
    existing = [make_edit(cluster, editor).pk]
    client.force_login(editor)
    response = client.post(
        "/clusters/c1/import/", {"file": SimpleUploadedFile("offsets.yaml", upload)}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing was staged." in html and message in html
    assert_nothing_changed(existing)


def test_the_import_api_names_what_is_wrong_with_a_configmap(client, cluster, editor):
    existing = [make_edit(cluster, editor).pk]
    client.force_login(editor)
    for document, field, message in [
        (yaml.safe_load(NOT_A_CONFIGMAP), "kind", "must be ConfigMap, not 'Secret'"),
        (NO_KEY.decode(), 'data["offsets.json"]', "is required"),
        (
            {"apiVersion": "v1", "kind": "ConfigMap", "data": {"offsets.json": "{"}},
            'data["offsets.json"]',
            "invalid JSON",
        ),
    ]:
        response = client.post(
            "/api/v1/edits/import/",
            {"cluster": "c1", "document": document},
            content_type="application/json",
        )
        assert response.status_code == 400, response.content
        assert message in response.json()["document"][field][0]
    response = client.post(
        "/api/v1/edits/import/",
        {"cluster": "c1", "document": NO_CONNECTOR.decode()},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "does not name its connector" in response.json()["connector"][0]
    assert_nothing_changed(existing)


HEAD = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
UNREADABLE = {
    "deep nesting": (HEAD + b"x: " + b"[" * 5000 + b"]" * 5000, "nesting deeper than 20"),
    "integer of thousands of digits": (HEAD + b"x: " + b"9" * 5000, "an integer of 5,000"),
    "year zero": (HEAD + b"x: 0000-01-01", "year 0 is out of range"),
    "month 13": (HEAD + b"x: 2001-13-45", "month must be in 1..12"),
    "tagged february 30": (HEAD + b"x: !!timestamp 2001-02-30", "day is out of range"),
    "a million values": (HEAD + b"x: [" + b"1," * 700_000 + b"1]", "more than 10,000 values"),
}


@pytest.mark.parametrize(("upload", "message"), UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_yaml_upload_is_a_400_with_its_reason_on_the_page_and_the_api(
    client, cluster, editor, user, upload, message
):
    existing = [make_edit(cluster, editor).pk]
    client.force_login(editor)
    response = client.post(
        "/clusters/c1/import/", {"file": SimpleUploadedFile("offsets.yaml", upload)}
    )
    assert response.status_code == 400
    assert (
        message in response.content.decode() and "invalid YAML at line" in response.content.decode()
    )
    client.force_login(user)  # a viewer may dry-run
    response = client.post(
        "/api/v1/edits/import/",
        {"cluster": "c1", "document": upload.decode(), "dry_run": True},
        content_type="application/json",
    )
    assert response.status_code == 400, response.content[:300]
    assert message in json.dumps(response.json())
    assert_nothing_changed(existing)


def test_the_import_command_names_what_is_wrong_with_a_configmap(tmp_path, cluster, editor):
    existing = [make_edit(cluster, editor).pk]
    path = tmp_path / "offsets.yaml"
    for upload, message in [
        (NOT_A_CONFIGMAP, "kind: must be ConfigMap"),
        (NO_CONNECTOR, "does not name its connector"),
        (NEITHER, "neither JSON"),
    ]:
        path.write_bytes(upload)
        with pytest.raises(CommandError, match=message):
            call_command("import_offsets", "--cluster", "c1", "--file", str(path), "--user", "erin")
    assert_nothing_changed(existing)


def test_a_strimzi_export_names_one_connector_and_a_valid_name(logged_in_client, cluster):
    for query, field in [
        ("format=strimzi", "connectors"),
        ("format=strimzi&connectors=a,b", "connectors"),
        ("format=strimzi&connector=a&configmap_name=Not_Valid", "configmap_name"),
        ("format=strimzi&connector=a&namespace=a.b", "namespace"),
        ("format=strimzi&connector=a&from_beginning=on", "from_beginning"),
    ]:
        response = logged_in_client.get(f"/clusters/c1/export/?{query}")
        assert response.status_code == 400 and field in response.json()["errors"], query
        response = logged_in_client.get(
            f"/api/v1/edits/export/?cluster=c1&{query.replace('format=', 'shape=')}"
        )
        assert response.status_code == 400 and field in response.json(), query
    with pytest.raises(CommandError, match="exports one connector"):
        call_command("export_offsets", "--cluster", "c1", "--format", "strimzi")
    with pytest.raises(CommandError, match="latest offsets only"):
        call_command(
            "export_offsets", "--cluster", "c1", "--format", "strimzi", "--connectors", "a",
            "--from-beginning",
        )  # fmt: skip


def test_the_schema_offers_the_strimzi_shape(logged_in_client):
    schema = logged_in_client.get(
        "/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    ).json()
    parameters = schema["paths"]["/api/v1/edits/export/"]["get"]["parameters"]
    shape = next(p for p in parameters if p["name"] == "shape")
    assert "strimzi" in shape["schema"]["enum"]
    assert {"configmap_name", "namespace"} <= {p["name"] for p in parameters}


# --- With a broker ------------------------------------------------------------------------

SINK = "s3-sink-orders"
SOURCE = "file-source-audit"


@pytest.mark.integration
def test_an_exported_configmap_imports_back_as_no_change(fresh_demo, tmp_path):
    for connector in (SOURCE, SINK):
        out = io.StringIO()
        call_command(
            "export_offsets", "--cluster", "fresh", "--connectors", connector,
            "--format", "strimzi", "--namespace", "kafka", stdout=out,
        )  # fmt: skip
        configmap = yaml.safe_load(out.getvalue())
        assert configmap["metadata"]["name"] == f"{connector}-offsets"
        assert configmap["metadata"]["namespace"] == "kafka"
        kip875 = io.StringIO()
        call_command(
            "export_offsets", "--cluster", "fresh", "--connectors", connector, stdout=kip875
        )
        assert json.loads(configmap["data"]["offsets.json"]) == json.loads(kip875.getvalue())
        path = tmp_path / "offsets.yaml"
        path.write_text(out.getvalue())
        out = io.StringIO()
        call_command(
            "import_offsets", "--cluster", "fresh", "--file", str(path), "--dry-run", stdout=out
        )
        assert f"{connector}: " in out.getvalue()
        assert "Dry run: 0 edit(s) would be staged" in out.getvalue()
    assert not OffsetEdit.objects.exists()


@pytest.mark.integration
def test_a_changed_configmap_from_the_page_stages_a_draft_with_its_diff(client, fresh_demo, editor):
    client.force_login(editor)
    response = client.get(f"/clusters/fresh/export/?connector={SINK}&format=strimzi")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/yaml"
    assert re.fullmatch(
        rf'attachment; filename="fresh-{SINK}-offsets-configmap-\d{{8}}T\d{{4}}Z\.yaml"',
        response["Content-Disposition"],
    )
    configmap = yaml.safe_load(response.content)
    offsets = json.loads(configmap["data"]["offsets.json"])
    entry = offsets["offsets"][0]
    entry["offset"]["kafka_offset"] = 0
    configmap["data"]["offsets.json"] = json.dumps({"offsets": [entry]})
    upload = strimzi.dump_yaml(configmap).encode()
    response = client.post(
        "/clusters/fresh/import/",
        {"file": SimpleUploadedFile("cm.yaml", upload), "dry_run": "on"},
    )
    assert response.status_code == 200 and 'id="import-preview"' in response.content.decode()
    assert not OffsetEdit.objects.exists()
    response = client.post(
        "/clusters/fresh/import/", {"file": SimpleUploadedFile("cm.yaml", upload)}
    )
    assert response.status_code == 302
    edit = OffsetEdit.objects.get()
    assert (edit.connector, edit.strategy, edit.state) == (SINK, "import", "draft")
    change = edit.changes.get()
    assert (change.topic, change.kafka_partition) == (
        entry["partition"]["kafka_topic"],
        entry["partition"]["kafka_partition"],
    )


@pytest.mark.integration
def test_the_api_exports_a_configmap_and_imports_it_as_a_dry_run(client, fresh_demo, editor):
    client.force_login(editor)
    response = client.get(
        f"/api/v1/edits/export/?cluster=fresh&connector={SOURCE}&shape=strimzi"
        "&configmap_name=audit.offsets"
    )
    assert response.status_code == 200
    configmap = response.json()
    assert configmap["kind"] == "ConfigMap" and configmap["metadata"]["name"] == "audit.offsets"
    assert configmap["metadata"]["annotations"][strimzi.CONNECTOR_ANNOTATION] == SOURCE
    response = client.post(
        "/api/v1/edits/import/",
        {"cluster": "fresh", "document": configmap, "dry_run": True},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response.json() == {
        "previews": [],
        "unchanged": {SOURCE: response.json()["unchanged"][SOURCE]},
    }
    assert not OffsetEdit.objects.exists()
