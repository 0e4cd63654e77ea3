"""Evaluate the alert rules and send the alert messages that are due."""

import logging
import signal
import threading

from django.core.management.base import BaseCommand, CommandError, CommandParser

from offsets.alerts import delivery, evaluation

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Evaluate the alert rules against the stored results (conditions that need no refresh, "
        "such as an edit waiting for approval, included) and send the messages that are due, "
        "retrying failed ones with backoff. --every repeats it on that period until "
        "SIGTERM/SIGINT."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--every", type=float, metavar="SECONDS", help="Repeat on this period until stopped"
        )

    def handle(self, *args: object, every: float | None, **options: object) -> None:
        if every is not None and every <= 0:
            raise CommandError("--every must be a positive number of seconds.")
        self.stop = threading.Event()
        if every is not None:
            signal.signal(signal.SIGTERM, self.on_signal)
            signal.signal(signal.SIGINT, self.on_signal)
        while True:
            self.round()
            if every is None or self.stop.wait(every):
                return

    def round(self) -> None:
        try:
            evaluated = evaluation.evaluate()
            sent = delivery.send_due()
        except Exception:
            # The loop must outlive a bad round (a database hiccup); the next one tries again.
            logger.exception("Evaluating or sending the alerts failed")
            self.stdout.write(
                self.style.ERROR("Evaluating or sending the alerts failed; see the log.")
            )
            return
        for error in evaluated.errors:
            self.stdout.write(self.style.WARNING(f"Rule not evaluated: {error}"))
        self.stdout.write(
            f"{evaluated.queued} alert(s) queued, {sent.sent} sent, {sent.failed} failed attempt(s)"
        )

    def on_signal(self, signum: int, frame: object) -> None:
        self.stdout.write(f"Received {signal.Signals(signum).name}: stopping after this round.")
        self.stop.set()
