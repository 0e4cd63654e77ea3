"""Export file names: `<cluster>-<connector>-<kind>-<YYYYMMDDTHHMMZ>.json`, safe whatever the
names, and one name per export whether a page or the API offers it."""

import re
from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import unquote

import pytest

from dashboard.pages.formatting import attachment
from offsets.domain.download_names import download_name, export_name, safe_part

AT = datetime(2026, 11, 28, 23, 31, 42, tzinfo=UTC)
STAMP = r"\d{8}T\d{4}Z"


def test_a_connector_s_export_names_its_cluster_connector_kind_and_time():
    assert download_name("live", "audit-source", "offsets", AT) == (
        "live-audit-source-offsets-20261128T2331Z.json"
    )


def test_the_time_is_written_in_utc():
    local = AT.astimezone(timezone(timedelta(hours=-5)))
    assert download_name("live", "a", "offsets", local).endswith("-20261128T2331Z.json")


@pytest.mark.parametrize(
    ("connectors", "history", "configmap", "expected"),
    [
        ([], False, False, "live-offsets-20261128T2331Z.json"),  # the whole cluster
        (["audit-source"], False, False, "live-audit-source-offsets-20261128T2331Z.json"),
        (["a", "b"], False, False, "live-2-connectors-offsets-20261128T2331Z.json"),
        ([], True, False, "live-offsets-history-20261128T2331Z.json"),
        (["s"], False, True, "live-s-offsets-configmap-20261128T2331Z.json"),
    ],
)
def test_an_export_s_name_follows_what_it_holds(connectors, history, configmap, expected):
    assert export_name("live", connectors, history=history, configmap=configmap, at=AT) == expected


@pytest.mark.parametrize(
    ("hostile", "safe"),
    [
        ("../../etc/passwd", "_.._etc_passwd"),
        ('say "hi"; rm -rf', "say_hi_rm_-rf"),
        ("a\r\nSet-Cookie: x", "a_Set-Cookie_x"),
        ("<script>alert(1)</script>", "_script_alert_1_script_"),
        ("C:\\con|*?", "C_con_"),
        ("nul\x00\ud800", "nul_"),
        ("..", "_"),
        ("", "_"),
        ("-rf", "rf"),
        ("café ☕", "café_"),
    ],
)
def test_a_hostile_name_keeps_only_characters_safe_in_a_file_name(hostile, safe):
    assert safe_part(hostile) == safe


def test_a_very_long_name_is_cut():
    assert len(download_name("c" * 63, "x" * 249, "offsets-history", AT)) < 200


def test_a_non_ascii_name_travels_as_filename_star():
    header = attachment(download_name("live", "café", "offsets", AT))
    assert header.startswith("attachment; filename*=utf-8''")
    assert unquote(header.split("''", 1)[1]) == "live-café-offsets-20261128T2331Z.json"


@pytest.mark.integration
def test_the_cluster_export_has_one_name_on_the_page_and_in_the_api(logged_in_client, fresh_demo):
    page = logged_in_client.get("/clusters/fresh/export/")
    api = logged_in_client.get("/api/v1/edits/export/?cluster=fresh")
    names = [
        re.search(r'filename="([^"]+)"', response["Content-Disposition"]).group(1)
        for response in (page, api)
    ]
    for name in names:
        assert re.fullmatch(rf"fresh-offsets-{STAMP}\.json", name), name
    assert page["Content-Disposition"].startswith("attachment;")
    one = logged_in_client.get("/api/v1/edits/export/?cluster=fresh&connectors=es-sink-clicks")
    assert re.search(
        rf'filename="fresh-es-sink-clicks-offsets-{STAMP}\.json"', one["Content-Disposition"]
    )
