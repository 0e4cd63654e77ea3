"""add_cluster: register (or change) a Kafka Connect cluster, its topics and its workers."""

import os
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from devkit import embedded
from offsets.models import Cluster


def parse_client_setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise CommandError(f"--client-config expects key=value, got {text!r}")
    return key.strip(), value


class Command(BaseCommand):
    help = "Add (or with --update, change) a Kafka Connect cluster the dashboard reads."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="Short name used in URLs, e.g. prod-eu")
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument("--bootstrap-servers", help="HOST:PORT[,HOST:PORT...]")
        where.add_argument(
            "--embedded",
            action="store_true",
            help="The embedded broker and Connect worker (embedded_kafka start): the broker's "
            "address, the worker's REST URL, topics and offset flush interval",
        )
        parser.add_argument("--offsets-topic", default=None, help="default connect-offsets")
        parser.add_argument("--configs-topic", default=None, help="default connect-configs")
        parser.add_argument("--status-topic", default=None, help="default connect-status")
        parser.add_argument(
            "--connect-url",
            action="append",
            default=None,
            help="Connect REST URL (optional); repeat it or comma-separate several workers, "
            "tried in order",
        )
        parser.add_argument("--connect-username", default=None, help="Connect REST basic auth")
        password = parser.add_mutually_exclusive_group()
        password.add_argument(
            "--connect-password",
            default=None,
            help="Connect REST basic auth password (visible in the process list: prefer "
            "--connect-password-file or --connect-password-env)",
        )
        password.add_argument("--connect-password-file", type=Path, help="Read it from a file")
        password.add_argument("--connect-password-env", help="Read it from this variable")
        parser.add_argument("--connect-ca-file", default=None, help="CA bundle (PEM) for HTTPS")
        parser.add_argument("--connect-cert-file", default=None, help="Client certificate (PEM)")
        parser.add_argument("--connect-key-file", default=None, help="Its private key (PEM)")
        parser.add_argument(
            "--offset-flush-interval-ms",
            type=int,
            help="The workers' offset.flush.interval.ms, which stalls are judged on (default "
            "60000, or the embedded worker's)",
        )
        parser.add_argument(
            "--client-config",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="Extra librdkafka setting, repeatable, e.g. security.protocol=SASL_SSL",
        )
        parser.add_argument(
            "--update", action="store_true", help="Change the cluster if it exists already"
        )

    def handle(self, *args: object, **options: object) -> None:
        name = options["name"]
        cluster = Cluster.objects.filter(name=name).first()
        if cluster and not options["update"]:
            raise CommandError(f"Cluster {name!r} exists already (use --update to change it).")
        cluster = cluster or Cluster(name=name)
        client_config = dict(parse_client_setting(s) for s in options["client_config"])
        if options["embedded"]:
            info = embedded.EmbeddedKafka(settings.RUN_DIR).status()
            if info is None:
                raise CommandError(
                    "No embedded Kafka is running (start it with: embedded_kafka start)."
                )
            cluster.bootstrap_servers = info.bootstrap_servers
            where = {"connect_url": info.connect_url}
            if info.connect_url:
                where.update(embedded.WORKER_TOPICS)
                cluster.offset_flush_interval_ms = embedded.WORKER_FLUSH_INTERVAL_MS
        else:
            cluster.bootstrap_servers = options["bootstrap_servers"]
            where = {}
        defaults = {
            "offsets_topic": "connect-offsets",
            "configs_topic": "connect-configs",
            "status_topic": "connect-status",
            "connect_url": "",
        }
        # An option given on the command line wins over the embedded worker's own values.
        if options["connect_url"] is not None:
            options["connect_url"] = ",".join(options["connect_url"])
        for field, default in defaults.items():
            given = options[field]
            setattr(cluster, field, given if given is not None else where.get(field, default))
        if options["offset_flush_interval_ms"] is not None:
            if options["offset_flush_interval_ms"] <= 0:
                raise CommandError("--offset-flush-interval-ms must be positive.")
            cluster.offset_flush_interval_ms = options["offset_flush_interval_ms"]
        cluster.client_config = client_config
        self.set_connect_options(cluster, options)
        try:
            cluster.full_clean()
        except ValidationError as exc:
            problems = "; ".join(
                f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items()
            )
            raise CommandError(f"Invalid cluster: {problems}") from exc
        created = cluster.pk is None
        cluster.save()
        self.stdout.write(
            f"{'Added' if created else 'Updated'} cluster {cluster.name} "
            f"({cluster.bootstrap_servers}; topics {cluster.offsets_topic}, "
            f"{cluster.configs_topic}, {cluster.status_topic})"
        )

    def set_connect_options(self, cluster: Cluster, options: dict) -> None:
        """Set the Connect REST auth and TLS options given; others keep their stored value."""
        for field in ("username", "ca_file", "cert_file", "key_file"):
            if options[f"connect_{field}"] is not None:
                setattr(cluster, f"connect_{field}", options[f"connect_{field}"])
        if options["connect_password_file"] is not None:
            try:
                text = options["connect_password_file"].read_text()
            except OSError as exc:
                raise CommandError(f"--connect-password-file: {exc.strerror}") from exc
            cluster.connect_password = text.rstrip("\r\n")
        elif options["connect_password_env"] is not None:
            variable = options["connect_password_env"]
            if variable not in os.environ:
                raise CommandError(f"--connect-password-env: {variable} is not set.")
            cluster.connect_password = os.environ[variable]
        elif options["connect_password"] is not None:
            cluster.connect_password = options["connect_password"]
