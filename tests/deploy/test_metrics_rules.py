"""The pure parts of /metrics: who may read it, the commit-rate window, label values."""

from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from dashboard.metrics import address_allowed, bearer_token
from offsets.queries.metrics import COMMIT_RATE_BUCKETS, commit_rate_window, label, one_hot


@pytest.mark.parametrize(
    ("address", "networks"),
    [
        ("192.0.2.7", ["192.0.2.7"]),
        ("10.1.2.3", ["192.0.2.7", "10.0.0.0/8"]),
        ("10.255.255.255", ["10.0.0.0/8"]),
        ("2001:db8::1", ["2001:db8::/32"]),
        ("::ffff:10.1.2.3", ["10.0.0.0/8"]),  # an IPv4 client of a dual-stack server
        ("::1", ["::1"]),
    ],
)
def test_it_allows_an_address_inside_a_listed_network(address, networks):
    assert address_allowed(address, networks)


@pytest.mark.parametrize(
    ("address", "networks"),
    [
        ("192.0.2.8", ["192.0.2.7"]),
        ("11.0.0.1", ["10.0.0.0/8"]),
        ("10.0.0.1", ["2001:db8::/32"]),
        ("2001:db9::1", ["2001:db8::/32"]),
        ("10.1.2.3", []),
        ("", ["0.0.0.0/0"]),
        (None, ["0.0.0.0/0"]),
        ("not-an-address", ["0.0.0.0/0"]),
        ("10.0.0.1, 192.0.2.7", ["192.0.2.7"]),  # a forwarded list is no address
    ],
)
def test_it_refuses_an_address_outside_every_listed_network(address, networks):
    assert not address_allowed(address, networks)


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER abc ", "abc"),
        ("Bearer", None),
        ("Bearer ", None),
        ("Bearer a b", None),
        ("Basic YWxpY2U6c2VjcmV0", None),
        ("Token abc", None),
        ("abc", None),
    ],
)
def test_it_reads_only_a_bearer_token(header, token):
    assert bearer_token(header) == token


def test_the_commit_rate_window_is_the_whole_buckets_before_the_refresh_ended():
    end = datetime(2026, 3, 1, 12, 7, 30, tzinfo=UTC)
    start, stop = commit_rate_window(end, bucket_seconds=300)
    # The bucket from 12:05 is still filling at 12:07:30: it is left out.
    assert stop == datetime(2026, 3, 1, 12, 5, tzinfo=UTC)
    assert (stop - start).total_seconds() == COMMIT_RATE_BUCKETS * 300


def test_a_refresh_ending_on_a_bucket_boundary_takes_the_buckets_before_it():
    end = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    start, stop = commit_rate_window(end, bucket_seconds=60)
    assert stop == end
    assert start == datetime(2026, 3, 1, 11, 60 - COMMIT_RATE_BUCKETS, tzinfo=UTC)


def test_one_hot_marks_only_the_current_choice():
    assert one_hot("WARN", ("OK", "WARN", "ERR")) == [("OK", 0.0), ("WARN", 1.0), ("ERR", 0.0)]
    assert one_hot("", ("OK", "WARN")) == [("OK", 0.0), ("WARN", 0.0)]


def test_a_label_keeps_any_encodable_text_and_escapes_lone_surrogates():
    assert label('a "b"\\c\nd é 🚀') == 'a "b"\\c\nd é 🚀'
    assert label("a\udc80b") == "a\\udc80b"
    assert label(7) == "7"
    assert label("a\rb") == "a\\rb"


HOSTILE_NAMES = [
    'quote " and backslash \\ and newline \n end',
    "\\n is not a newline",
    "trailing backslash \\",
    "} { = , #  HELP TYPE",
    "tab\tcarriage\rreturn",
    "ünïcödé 名前 🚀",
    "",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_hostile_label_value_survives_the_text_format(name):
    registry = CollectorRegistry(auto_describe=False)

    class One:
        def collect(self):
            family = GaugeMetricFamily("x", "help", labels=["connector"])
            family.add_metric([label(name)], 3)
            yield family

    registry.register(One())
    exposition = generate_latest(registry)
    assert b"\r" not in exposition  # one line per sample, whoever splits lines at a CR
    parsed = list(text_string_to_metric_families(exposition.decode()))
    shown = name.replace("\r", "\\r")
    assert [(s.labels, s.value) for s in parsed[0].samples] == [({"connector": shown}, 3.0)]


def test_a_lone_surrogate_in_a_name_does_not_break_the_text_format():
    registry = CollectorRegistry(auto_describe=False)

    class One:
        def collect(self):
            family = GaugeMetricFamily("x", "help", labels=["connector"])
            family.add_metric([label("odd\ud800name")], 1)
            yield family

    registry.register(One())
    parsed = list(text_string_to_metric_families(generate_latest(registry).decode()))
    assert parsed[0].samples[0].labels == {"connector": "odd\\ud800name"}
