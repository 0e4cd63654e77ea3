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
        parser.add_argument("--bootstrap-servers", required=True, help="HOST:PORT[,HOST:PORT...]")
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
        cluster.bootstrap_servers = options["bootstrap_servers"]
        cluster.offsets_topic = options["offsets_topic"]
        cluster.configs_topic = options["configs_topic"]
        cluster.status_topic = options["status_topic"]
        cluster.connect_url = options["connect_url"]
        cluster.client_config = dict(parse_client_setting(s) for s in options["client_config"])
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
