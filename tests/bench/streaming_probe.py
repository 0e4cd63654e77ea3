"""The Structured Streaming alternative to the live loop, measured at its floor.

    python -m tests.bench.streaming_probe --bootstrap HOST:PORT --topic connect-offsets \
        --seconds 60 --out probe.json

Issue 61 asked whether Spark Structured Streaming (micro-batches over the offsets topic,
Spark's own offset log and checkpoints) is a better engine for the live path than a loop of
batch refreshes. This runs the least such a path would do: a streaming read of the offsets
topic through the project's own Python source (each micro-batch's new records, read and
folded by the same task code as a refresh's) with a trigger of one second, and a
`foreachBatch` that only collects the folded rows. It leaves out what the loop does beyond
that (merging with the stored state, saving, lag, configs and status), so its cost is a lower
bound for a streaming live path. `bench_live_scale --streaming-probe` starts it beside the
same writer as the loop and reports its CPU per micro-batch and the commits' age when their
batch ended, beside the loop's figures. Not the product: nothing here is shipped.
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from offsets.kafka import planner
from offsets.spark.kafka_source import KafkaRanges, KafkaSnapshotReader, KafkaSnapshotSource, pack

NAME = "kafka-snapshot-stream"


class StreamSource(KafkaSnapshotSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def streamReader(self, schema) -> "StreamReader":
        return StreamReader(self.options)


class StreamReader(DataSourceStreamReader):
    """Offsets are {partition: next offset}; a micro-batch reads what was written since."""

    def __init__(self, options: dict) -> None:
        self.snapshot = KafkaSnapshotReader(options)

    def _ends(self) -> dict:
        ranges = planner.plan_read(
            self.snapshot.settings, self.snapshot.topic, isolation_level="read_committed"
        )
        return {str(partition): end for partition, (_, end) in ranges.items()}

    def initialOffset(self) -> dict:
        return self._ends()  # from now on, as the loop after its full refresh

    def latestOffset(self, start=None, limit=None) -> dict:
        return self._ends()

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        ranges = {
            int(p): (start.get(p, stop), stop) for p, stop in end.items() if stop > start.get(p, 0)
        }
        reader = self.snapshot
        return [
            KafkaRanges(
                reader.settings,
                reader.topic,
                group,
                reader.isolation_level,
                reader.bucket_seconds,
                reader.timeout,
            )
            for group in pack(ranges, reader.max_tasks)
        ]

    def read(self, partition: InputPartition):
        return self.snapshot.read(partition)

    def commit(self, end: dict) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", default="connect-offsets")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from offsets.spark.session import get_spark

    spark = get_spark()
    spark.dataSource.register(StreamSource)
    batches: list[dict] = []

    def collect(frame, batch_id: int) -> None:
        rows = frame.where("kind = 'commit'").select("timestamp_ms").collect()
        ended = time.time() * 1000
        batches.append(
            {"id": batch_id, "ended_ms": ended, "ages": [ended - r[0] for r in rows if r[0]]}
        )

    query = (
        spark.readStream.format(NAME)
        .option("topic", args.topic)
        .option("kafka.settings", json.dumps({"bootstrap.servers": args.bootstrap}))
        .load()
        .writeStream.foreachBatch(collect)
        .trigger(processingTime="1 second")
        .option("checkpointLocation", tempfile.mkdtemp(prefix="streaming-probe-"))
        .start()
    )
    print("started", flush=True)
    query.awaitTermination(args.seconds)
    query.stop()
    args.out.write_text(json.dumps(batches))


if __name__ == "__main__":
    main()
