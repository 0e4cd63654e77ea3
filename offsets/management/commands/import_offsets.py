"""Stage offset edits from a KIP-199 or KIP-875 document or a Strimzi offsets ConfigMap."""

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from offsets.edits.errors import EditInputError
from offsets.edits.imports import import_document
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound
from offsets.management.arguments import add_cluster_argument, get_cluster, get_user
from offsets.rights.gate import Refused
from offsets.rights.grants import SHELL_OPERATOR


class Command(BaseCommand):
    help = (
        "Stage offset edits (one draft per connector) from a KIP-199 document, a KIP-875 "
        "document with --connector, or a Strimzi offsets ConfigMap (YAML or JSON, for the "
        "connector it names or --connector). Never applies anything: the edits are reviewed, approved "
        "and applied like any other. --dry-run prints the diff and stages nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_cluster_argument(parser)
        parser.add_argument(
            "--file", required=True, help="The JSON document or ConfigMap ('-' for stdin)"
        )
        parser.add_argument(
            "--connector", default="", help="The connector of a KIP-875 document or ConfigMap"
        )
        parser.add_argument("--dry-run", action="store_true", help="Print the diff, stage nothing")
        parser.add_argument(
            "--user",
            help="Stage as this user (the editor role on every connector the document names); "
            "a --dry-run without it reads as the server's operator",
        )
        parser.add_argument("--comment", default="", help="Why the offsets change")

    def handle(self, *args: object, **options: object) -> None:
        cluster = get_cluster(options["cluster"])
        user = get_user(options["user"])
        if user is None and not options["dry_run"]:
            raise CommandError("Staging needs --user (an editor); --dry-run does not.")
        try:
            data = (
                sys.stdin.buffer.read()
                if options["file"] == "-"
                else Path(options["file"]).read_bytes()
            )
        except OSError as exc:
            raise CommandError(f"Cannot read {options['file']}: {exc}") from exc
        try:
            result = import_document(
                cluster=cluster,
                user=user or SHELL_OPERATOR,
                data=data,
                connector=options["connector"],
                dry_run=options["dry_run"],
                comment=options["comment"],
            )
        except EditInputError as exc:
            where = f"{exc.field}: " if exc.field else ""
            raise CommandError(f"Nothing was staged. {where}{exc.message}") from exc
        except (Refused, KafkaUnavailable, TopicNotFound) as exc:
            raise CommandError(f"Nothing was staged. {exc}") from exc
        for preview in result.previews:
            self.stdout.write(preview.as_text())
        for name, reason in result.unchanged.items():
            self.stdout.write(f"{name}: {reason}")
        if options["dry_run"]:
            self.stdout.write(
                f"Dry run: {len(result.previews)} edit(s) would be staged; nothing was."
            )
            return
        for edit in result.edits:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Staged edit #{edit.pk} for {edit.connector} ({edit.changes.count()} change(s)), "
                    "a draft: submit it for approval."
                )
            )
