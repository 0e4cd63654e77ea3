"""Log lines: one JSON object a line (or plain text), secrets masked like everywhere else."""

import json
import logging
import sys

from dashboard.logs import JsonFormatter, PlainFormatter, logging_config

SECRET = "Zq7PlantedXk4"


def record(message: str, *args, exc_info=None) -> logging.LogRecord:
    return logging.LogRecord(
        "offsets.refresh", logging.WARNING, __file__, 1, message, args, exc_info
    )


def test_a_json_line_is_one_object_with_the_message_masked():
    line = JsonFormatter().format(
        record('connect %s failed\n"quoted"', f"jdbc:postgresql://db/app?password={SECRET}")
    )
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["level"] == "WARNING" and entry["logger"] == "offsets.refresh"
    assert entry["message"].startswith("connect jdbc:postgresql://db/app?password=")
    assert entry["message"].endswith('failed\n"quoted"')
    assert SECRET not in line


def test_an_exception_goes_in_its_own_field_masked():
    try:
        raise ValueError(f"Authorization: Bearer {SECRET}")
    except ValueError:
        line = JsonFormatter().format(record("boom", exc_info=sys.exc_info()))
    entry = json.loads(line)
    assert "ValueError" in entry["error"] and SECRET not in line


def test_a_plain_line_is_masked_too():
    line = PlainFormatter().format(record("url %s", f"redis://:{SECRET}@cache:6379/0"))
    assert "WARNING offsets.refresh: url redis://" in line and SECRET not in line


def test_log_format_picks_the_formatter(monkeypatch):
    monkeypatch.setenv("LOG_FORMAT", "json")
    assert logging_config("INFO")["handlers"]["console"]["formatter"] == "json"
    monkeypatch.setenv("LOG_FORMAT", "plain")
    assert logging_config("INFO")["handlers"]["console"]["formatter"] == "plain"
    monkeypatch.delenv("LOG_FORMAT")
    assert logging_config("INFO")["handlers"]["console"]["formatter"] == "plain"
