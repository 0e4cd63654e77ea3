from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser

from offsets.edits.reconcile import reconcile_edits, stale_after
from offsets.management.arguments import get_cluster, get_user
from offsets.models import OffsetEdit


class Command(BaseCommand):
    help = (
        "Settle offset edits left in 'applying' (a crash or an outage during an apply) by "
        "reading the offsets back: applied, failed, or conflict when something else wrote."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", help="Only this cluster's edits (default: all)")
        parser.add_argument(
            "--min-age",
            type=float,
            default=None,
            metavar="SECONDS",
            help=(
                "Only edits whose apply started at least this long ago (default: the age "
                "after which an apply has surely lost its process, 3 x KAFKA_WRITE_TIMEOUT "
                "+ 5 min). Use 0 only when you know no apply is running: reconciling a live "
                "apply fences its transaction and records a premature outcome."
            ),
        )
        parser.add_argument(
            "--user", help="Record the reconciliation as this user (default: system)"
        )

    def handle(self, *args: object, **options: object) -> None:
        cluster = None
        if options["cluster"]:
            cluster = get_cluster(options["cluster"])
        user = get_user(options["user"])
        if options["min_age"] is None:
            min_age = stale_after()
        elif options["min_age"] < 0:
            raise CommandError("--min-age must be 0 or more.")
        else:
            min_age = timedelta(seconds=options["min_age"])
        results = reconcile_edits(cluster=cluster, min_age=min_age, user=user)
        if not results:
            younger = OffsetEdit.objects.filter(state=OffsetEdit.State.APPLYING)
            if cluster is not None:
                younger = younger.filter(cluster=cluster)
            if younger.exists():
                self.stdout.write(
                    f"No edit has been applying for {min_age} or longer; "
                    f"{younger.count()} younger one(s) may still be running (--min-age 0 "
                    "settles them now)."
                )
            else:
                self.stdout.write("No edit is left in 'applying'.")
            return
        in_doubt = 0
        for edit, error in results:
            if error:
                in_doubt += 1
                self.stdout.write(
                    self.style.WARNING(
                        f"Edit #{edit.pk} ({edit.connector}) stays applying: {error}"
                    )
                )
            else:
                self.stdout.write(f"Edit #{edit.pk} ({edit.connector}): {edit.state}")
        if in_doubt:
            raise CommandError(f"{in_doubt} edit(s) could not be settled; run again later.")
