"""manage.py wait_for_database: wait until the database answers, and with --migrated until
every migration is applied. The image's processes start with it: a database still starting,
or a migrate step still running beside them, is a wait rather than a crash and a restart loop.
"""

import logging
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

from offsets.domain.masking import mask_text

# Through logging: the image writes its lines as JSON (LOG_FORMAT).
logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Wait until the database answers (with --migrated: and has every migration applied), "
        "up to --seconds; exit 1 saying what was missing if not."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--seconds", type=float, default=60.0, help="How long (default 60)")
        parser.add_argument(
            "--migrated", action="store_true", help="Wait for every migration to be applied too"
        )

    def handle(self, *args: object, seconds: float, migrated: bool, **options: object) -> None:
        deadline = time.monotonic() + seconds
        said = None
        while (missing := self.missing(migrated)) is not None:
            what, words = missing
            if time.monotonic() >= deadline:
                raise CommandError(f"Gave up after {seconds:g} s: {words}")
            if what != said:  # once per kind of wait, not once a second or per count
                logger.warning("Waiting: %s", words)
                said = what
            time.sleep(1)

    def missing(self, migrated: bool) -> tuple[str, str] | None:
        """What is not there yet ("database" or "migrations") and in words; None once ready."""
        try:
            connection.ensure_connection()
            if not migrated:
                return None
            executor = MigrationExecutor(connection)
            plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        except DatabaseError as exc:
            connection.close()
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return "database", f"the database does not answer ({mask_text(text)})"
        if plan:
            return "migrations", f"{len(plan)} migration(s) not applied yet (migrate applies them)"
        return None
