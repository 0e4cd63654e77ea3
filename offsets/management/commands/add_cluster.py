"""add_cluster: register (or change) a Kafka Connect cluster, its topics and its workers, or
a standalone worker and its offsets file."""

import os
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

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
        self.add_location_arguments(parser.add_mutually_exclusive_group(required=True))
        self.add_standalone_arguments(parser)
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
            "60000)",
        )
        parser.add_argument(
            "--refresh-every",
            type=int,
            metavar="SECONDS",
            help="Seconds between the scheduler's refreshes (default 60; 0: only by hand)",
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

    def add_standalone_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--standalone-bootstrap-servers",
            metavar="HOST:PORT",
            help="A standalone worker's Kafka cluster (optional: for its sinks' groups and lag)",
        )

    def add_location_arguments(self, where) -> None:
        """Add the options that say where the cluster is to `where`, a group of which exactly
        one is given (argparse's mutually exclusive group)."""
        where.add_argument("--bootstrap-servers", help="HOST:PORT[,HOST:PORT...]")
        where.add_argument(
            "--standalone-offsets-file",
            metavar="PATH",
            help="A standalone worker: its offset.storage.file.filename as this host reads it "
            "(absolute); --standalone-bootstrap-servers names its sinks' Kafka cluster",
        )

    def locate(self, cluster: Cluster, options: dict) -> dict[str, str]:
        """Set where the cluster is; return the topics and Connect URL that go with it.

        Those are defaults: an option given on the command line wins over them. The
        development kit's `add_cluster` adds `--embedded` here.
        """
        if options.get("standalone_offsets_file"):
            cluster.kind = Cluster.Kind.STANDALONE
            cluster.offsets_file = options["standalone_offsets_file"]
            cluster.bootstrap_servers = options["standalone_bootstrap_servers"] or ""
            return {}
        if options.get("standalone_bootstrap_servers"):
            raise CommandError(
                "--standalone-bootstrap-servers goes with --standalone-offsets-file."
            )
        cluster.kind = Cluster.Kind.DISTRIBUTED
        cluster.offsets_file = ""
        cluster.bootstrap_servers = options["bootstrap_servers"]
        return {}

    def handle(self, *args: object, **options: object) -> None:
        name = options["name"]
        cluster = Cluster.objects.filter(name=name).first()
        if cluster and not options["update"]:
            raise CommandError(f"Cluster {name!r} exists already (use --update to change it).")
        cluster = cluster or Cluster(name=name)
        client_config = dict(parse_client_setting(s) for s in options["client_config"])
        where = self.locate(cluster, options)
        defaults = {
            "offsets_topic": "connect-offsets",
            "configs_topic": "connect-configs",
            "status_topic": "connect-status",
            "connect_url": "",
        }
        # An option given on the command line wins over what `locate` found.
        if options["connect_url"] is not None:
            options["connect_url"] = ",".join(options["connect_url"])
        for field, default in defaults.items():
            given = options[field]
            setattr(cluster, field, given if given is not None else where.get(field, default))
        if options["offset_flush_interval_ms"] is not None:
            if options["offset_flush_interval_ms"] <= 0:
                raise CommandError("--offset-flush-interval-ms must be positive.")
            cluster.offset_flush_interval_ms = options["offset_flush_interval_ms"]
        if options["refresh_every"] is not None:
            if options["refresh_every"] < 0:
                raise CommandError("--refresh-every must be 0 (only by hand) or more seconds.")
            cluster.refresh_every_seconds = options["refresh_every"]
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
        self.say_done(cluster, "Added" if created else "Updated")

    def say_done(self, cluster: Cluster, done: str) -> None:
        if cluster.is_standalone:
            kafka = f"; Kafka {cluster.bootstrap_servers}" if cluster.has_kafka else ""
            self.stdout.write(
                f"{done} standalone worker {cluster.name} (offsets file {cluster.offsets_file}"
                f"{kafka})"
            )
            return
        self.stdout.write(
            f"{done} cluster {cluster.name} "
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
