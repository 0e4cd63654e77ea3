from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from offsets.kafka import embedded
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
            help="The embedded broker (embedded_kafka start): its address and the client "
            "settings it needs",
        )
        parser.add_argument("--offsets-topic", default="connect-offsets")
        parser.add_argument("--configs-topic", default="connect-configs")
        parser.add_argument("--status-topic", default="connect-status")
        parser.add_argument("--connect-url", default="", help="Connect REST URL (optional)")
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
            client_config = {**embedded.CLIENT_CONFIG, **client_config}
        else:
            cluster.bootstrap_servers = options["bootstrap_servers"]
        cluster.offsets_topic = options["offsets_topic"]
        cluster.configs_topic = options["configs_topic"]
        cluster.status_topic = options["status_topic"]
        cluster.connect_url = options["connect_url"]
        cluster.client_config = client_config
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
