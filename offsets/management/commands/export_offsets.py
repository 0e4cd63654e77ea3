"""Print connectors' offsets: KIP-875 or KIP-199 JSON, or a Strimzi offsets ConfigMap."""

from django.core.management.base import BaseCommand, CommandError, CommandParser

from offsets.edits.errors import ConnectorNotFound
from offsets.formats import jackson, strimzi
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound
from offsets.management.arguments import add_cluster_argument, get_cluster
from offsets.models import Cluster
from offsets.queries import offsets_export
from offsets.rights.grants import SHELL_OPERATOR


class Command(BaseCommand):
    help = (
        'Print connectors\' offsets as JSON: KIP-875 ({"offsets": [...]}) for one connector, '
        'KIP-199 ({"<connector>": [...]}) for several or all; or one connector\'s ConfigMap '
        "(YAML) for a Strimzi KafkaConnector's alterOffsets."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_cluster_argument(parser)
        parser.add_argument("--connectors", default="", help="Comma-separated names (default: all)")
        parser.add_argument(
            "--format",
            choices=["kip875", "kip199", "strimzi"],
            help="kip875 and strimzi need exactly one connector "
            "(default: kip875 for one, else kip199)",
        )
        parser.add_argument(
            "--configmap-name",
            default="",
            help="strimzi: the ConfigMap's name (default <connector>-offsets)",
        )
        parser.add_argument("--namespace", default="", help="strimzi: the ConfigMap's namespace")
        parser.add_argument(
            "--from-beginning",
            action="store_true",
            help="Every commit in the offsets topic, not only the latest (sources)",
        )

    def handle(self, *args: object, **options: object) -> None:
        cluster = get_cluster(options["cluster"])
        names = [n.strip() for n in options["connectors"].split(",") if n.strip()]
        kind = options["format"] or ("kip875" if len(names) == 1 else "kip199")
        if kind in ("kip875", "strimzi") and len(names) != 1:
            raise CommandError(f"--format {kind} exports one connector: name it with --connectors.")
        if kind == "strimzi":
            self._export_configmap(cluster, names[0], options)
            return
        try:
            if kind == "kip875":
                document = offsets_export.export_connector(
                    user=SHELL_OPERATOR,
                    cluster=cluster,
                    connector=names[0],
                    from_beginning=options["from_beginning"],
                )
            else:
                document = offsets_export.export_connectors(
                    user=SHELL_OPERATOR,
                    cluster=cluster,
                    connectors=names or None,
                    from_beginning=options["from_beginning"],
                )
        except ConnectorNotFound as exc:
            raise CommandError(exc.message) from exc
        except (KafkaUnavailable, TopicNotFound) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(jackson.dumps_text(document, indent=2))

    def _export_configmap(self, cluster: Cluster, connector: str, options: dict) -> None:
        if options["from_beginning"]:
            raise CommandError("A Strimzi ConfigMap holds the latest offsets only.")
        try:
            configmap = offsets_export.export_configmap(
                user=SHELL_OPERATOR,
                cluster=cluster,
                connector=connector,
                name=options["configmap_name"],
                namespace=options["namespace"],
            )
        except ConnectorNotFound as exc:
            raise CommandError(exc.message) from exc
        except (KafkaUnavailable, TopicNotFound, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(strimzi.dump_yaml(configmap), ending="")
