"""add_cluster with --embedded: the product's command, plus the embedded broker and worker.

Django runs this one instead of `offsets`' because `devkit` comes first in INSTALLED_APPS;
where the development kit is absent (the image), `add_cluster` has no --embedded.
"""

from django.conf import settings
from django.core.management.base import CommandError

from devkit import embedded, embedded_config
from offsets.management.commands import add_cluster
from offsets.models import Cluster


class Command(add_cluster.Command):
    def add_location_arguments(self, where) -> None:
        super().add_location_arguments(where)
        where.add_argument(
            "--embedded",
            action="store_true",
            help="The embedded broker and Connect worker (embedded_kafka start): the broker's "
            "address, the worker's REST URL, topics and offset flush interval",
        )

    def locate(self, cluster: Cluster, options: dict) -> dict[str, str]:
        """Take the running embedded broker's address, and its worker's URL and topics."""
        if not options["embedded"]:
            return super().locate(cluster, options)
        info = embedded.EmbeddedKafka(settings.RUN_DIR).status()
        if info is None:
            raise CommandError(
                "No embedded Kafka is running (start it with: embedded_kafka start)."
            )
        cluster.bootstrap_servers = info.bootstrap_servers
        where = {"connect_url": info.connect_url}
        if info.connect_url:
            where.update(embedded_config.WORKER_TOPICS)
            cluster.offset_flush_interval_ms = embedded_config.WORKER_FLUSH_INTERVAL_MS
        return where
