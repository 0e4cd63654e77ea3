"""Read /metrics back through prometheus-client's own parser, for the metrics tests."""

from prometheus_client.parser import text_string_to_metric_families

TOKEN = "metrics-test-token-0123456789"


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of an exposition: (name, its labels) -> value."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(parsed: dict, name: str, **labels: str) -> float | None:
    """The value of `kafka_connect_offsets_<name>` with exactly these labels; None if absent."""
    return parsed.get(("kafka_connect_offsets_" + name, frozenset(labels.items())))


def series(parsed: dict, name: str, **labels: str) -> dict[frozenset, float]:
    """Every sample of `kafka_connect_offsets_<name>` that has (at least) these labels."""
    wanted = set(labels.items())
    return {
        found: sample_value
        for (sample_name, found), sample_value in parsed.items()
        if sample_name == "kafka_connect_offsets_" + name and wanted <= found
    }


def scrape(client, token: str = TOKEN, **extra) -> dict[tuple[str, frozenset], float]:
    """GET /metrics with the bearer token; fails unless it answers 200."""
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}", **extra)
    assert response.status_code == 200, response.content
    return samples(response.content.decode())
