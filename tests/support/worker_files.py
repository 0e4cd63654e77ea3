"""FileStream connectors on a real Connect worker: their configs, input files and output topics."""

from pathlib import Path

from offsets.kafka import admin, producers, reading
from offsets.kafka.errors import TopicNotFound
from tests.support.connect_rest import STRING_CONVERTERS, ConnectRest, wait_until

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


def write_lines(path: Path, lines: list[str], *, append: bool = False) -> None:
    with path.open("a" if append else "w", encoding="utf-8") as out:
        out.writelines(f"{line}\n" for line in lines)


def byte_position(lines: list[str], count: int) -> int:
    """Return the file position after the first `count` lines (what FileStreamSource commits)."""
    return sum(len(line.encode()) + 1 for line in lines[:count])


def topic_values(kafka: dict, topic: str) -> list[str]:
    fast = {**kafka, "fetch.wait.max.ms": 10}
    try:
        records = list(reading.read_topic(fast, topic, timeout=5, batch_size=1))
    except TopicNotFound:
        return []
    return [record.value.decode() for record in sorted(records, key=lambda r: r.offset)]


def wait_for_values(kafka: dict, topic: str, count: int, *, timeout: float = 60) -> list[str]:
    return wait_until(
        lambda: topic_values(kafka, topic),
        lambda values: len(values) >= count,
        timeout=timeout,
        what=f"{count} records in {topic}",
    )


def produce(kafka: dict, topic: str, values: list[str]) -> None:
    admin.create_topics(kafka, [admin.TopicSpec(topic, 1, {})])
    producer = producers.java_producer(kafka)
    for value in values:
        producer.produce(topic, value=value.encode(), on_delivery=producers.raise_on_delivery_error)
    assert producer.flush(10) == 0


def file_source(path: Path, topic: str, **extra) -> dict:
    return {
        "connector.class": FILE_SOURCE,
        "file": str(path),
        "topic": topic,
        "tasks.max": "1",
        **STRING_CONVERTERS,
        **extra,
    }


def eos_file_source(path: Path, topic: str, offsets_topic: str) -> dict:
    return file_source(
        path,
        topic,
        **{
            "exactly.once.support": "required",
            "offsets.storage.topic": offsets_topic,
            "transaction.boundary": "poll",
        },
    )


def file_sink(path: Path, topic: str) -> dict:
    return {
        "connector.class": FILE_SINK,
        "file": str(path),
        "topics": topic,
        "tasks.max": "1",
        **STRING_CONVERTERS,
    }


def two_line_source(rest: ConnectRest, connector: str, path: Path, topic: str) -> tuple[str, Path]:
    """Start a FileStreamSource of two lines; return once it has committed position 8."""
    write_lines(path, ["one", "two"])
    rest.create(connector, file_source(path, topic))
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == 8)
    return connector, path


def running_source(rest: ConnectRest, connector: str, path: Path, topic: str) -> tuple[str, Path]:
    """Start a two_line_source; return once its task is RUNNING too."""
    two_line_source(rest, connector, path, topic)
    rest.wait_for_state(connector, "RUNNING", tasks=1)
    return connector, path


def stopped(rest: ConnectRest, connector: str) -> None:
    rest.stop(connector)
    rest.wait_for_state(connector, "STOPPED")
