from django.core.management.base import BaseCommand, CommandError, CommandParser

from offsets.edits.errors import ConnectorNotFound
from offsets.formats import jackson
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound
from offsets.management.arguments import add_cluster_argument, get_cluster
from offsets.services import offsets_export


class Command(BaseCommand):
    help = (
        'Print connectors\' offsets as JSON: KIP-875 ({"offsets": [...]}) for one connector, '
        'KIP-199 ({"<connector>": [...]}) for several or all.'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_cluster_argument(parser)
        parser.add_argument("--connectors", default="", help="Comma-separated names (default: all)")
        parser.add_argument(
            "--format",
            choices=["kip875", "kip199"],
            help="kip875 needs exactly one connector (default: kip875 for one, else kip199)",
        )
        parser.add_argument(
            "--from-beginning",
            action="store_true",
            help="Every commit in the offsets topic, not only the latest (sources)",
        )

    def handle(self, *args: object, **options: object) -> None:
        cluster = get_cluster(options["cluster"])
        names = [n.strip() for n in options["connectors"].split(",") if n.strip()]
        kind = options["format"] or ("kip875" if len(names) == 1 else "kip199")
        if kind == "kip875" and len(names) != 1:
            raise CommandError("--format kip875 exports one connector: name it with --connectors.")
        try:
            if kind == "kip875":
                document = offsets_export.export_connector(
                    cluster=cluster, connector=names[0], from_beginning=options["from_beginning"]
                )
            else:
                document = offsets_export.export_connectors(
                    cluster=cluster,
                    connectors=names or None,
                    from_beginning=options["from_beginning"],
                )
        except ConnectorNotFound as exc:
            raise CommandError(exc.message) from exc
        except (KafkaUnavailable, TopicNotFound) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(jackson.dumps_text(document, indent=2))
