"""How names from Kafka appear in download names and on pages (pure functions)."""

from urllib.parse import unquote

import pytest

from dashboard.pages.formatting import attachment, name_html, name_text


@pytest.mark.parametrize(
    "filename,expected",
    [
        ("prod-jdbc-offsets.json", 'attachment; filename="prod-jdbc-offsets.json"'),
        (
            "prod-a\r\nSet-Cookie: x-offsets.json",
            'attachment; filename="prod-a__Set-Cookie: x-offsets.json"',
        ),
        ('say "hi".json', 'attachment; filename="say \\"hi\\".json"'),
        ("../../etc/passwd", 'attachment; filename=".._.._etc_passwd"'),
        ("nul\x00\ud800.json", 'attachment; filename="nul__.json"'),
        ("", 'attachment; filename="offsets.json"'),
    ],
)
def test_a_download_name_is_one_header_line_and_never_a_path(filename, expected):
    assert attachment(filename) == expected


def test_a_non_ascii_download_name_travels_as_rfc_6266_utf8():
    value = attachment("prod-café ☕-offsets.json")
    assert value.startswith("attachment; filename*=utf-8''")
    assert unquote(value.split("''", 1)[1]) == "prod-café ☕-offsets.json"
    value.encode("ascii")  # a header value, whatever the name


@pytest.mark.parametrize(
    "name,html",
    [
        ("jdbc-source", "jdbc-source"),
        ("", '<span class="muted">(empty name)</span>'),
        ("line\nbreak\ttab", "line\\nbreak\\ttab"),
        ("nul\x00bell\x07c1\x85", "nul\\x00bell\\x07c1\\x85"),
        ("lone\ud800", "lone\\ud800"),
        ("<script>", "&lt;script&gt;"),
    ],
)
def test_every_name_is_visible_and_escaped(name, html):
    assert name_html(name) == html
    name_html(name).encode("utf-8")
    assert name_text(name) == (html if name else "(empty name)").replace("&lt;", "<").replace(
        "&gt;", ">"
    )
