from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from devkit.embedded import EmbeddedKafka, EmbeddedKafkaError


class Command(BaseCommand):
    help = (
        "Start, stop or show the embedded Apache Kafka broker and Kafka Connect worker (from the"
        " jars `make kafka-runtime` fetches; a new, empty broker at every start). `address`"
        " prints only the bootstrap servers, `connect-url` only the worker's REST URL."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["start", "stop", "status", "address", "connect-url"])
        parser.add_argument("--port", type=int, help="The broker's port (default: a free one)")
        parser.add_argument(
            "--connect-port", type=int, help="The worker's REST port (default: a free one)"
        )
        parser.add_argument(
            "--no-worker", action="store_true", help="Start the broker only, without a worker"
        )
        parser.add_argument(
            "--run-dir", help=f"Where pids, addresses and logs live (default {settings.RUN_DIR})"
        )

    def handle(self, *args: object, action: str, run_dir: str | None, **options: object) -> None:
        runtime = EmbeddedKafka(run_dir or settings.RUN_DIR)
        if action == "start":
            self.start(runtime, options)
        elif action == "stop":
            self.stop(runtime)
        else:
            self.show(runtime, action)

    def start(self, runtime: EmbeddedKafka, options: dict) -> None:
        running = runtime.status()
        if not running:
            self.stdout.write("Starting the Kafka broker and the Connect worker...")
        try:
            info = runtime.start(
                port=options["port"],
                connect_port=options["connect_port"],
                worker=not options["no_worker"],
            )
        except EmbeddedKafkaError as exc:
            raise CommandError(str(exc)) from exc
        verb = "Already running" if running else "Started"
        self.stdout.write(f"{verb}: Kafka broker (pid {info.pid}, log {info.log_file})")
        if info.connect_url:
            self.stdout.write(
                f"{verb}: Connect worker at {info.connect_url}"
                f" (pid {info.connect_pid}, log {info.connect_log_file})"
            )
        self.stdout.write(info.bootstrap_servers)

    def stop(self, runtime: EmbeddedKafka) -> None:
        info = runtime.stop()
        if info is None:
            self.stdout.write("No embedded Kafka is running.")
            return
        worker = f" and the Connect worker at {info.connect_url}" if info.connect_url else ""
        self.stdout.write(
            f"Stopped the Kafka broker at {info.bootstrap_servers} (pid {info.pid}){worker}."
        )

    def show(self, runtime: EmbeddedKafka, action: str) -> None:
        """`status`, `address` or `connect-url` of what runs."""
        info = runtime.status()
        if info is None:
            raise CommandError(
                "No embedded Kafka is running (start it with: embedded_kafka start)."
            )
        if action == "address":
            self.stdout.write(info.bootstrap_servers)
        elif action == "connect-url":
            if not info.connect_url:
                raise CommandError("The embedded Kafka runs without a Connect worker.")
            self.stdout.write(info.connect_url)
        else:
            self.stdout.write(
                f"Running: Kafka broker at {info.bootstrap_servers} (pid {info.pid}, log {info.log_file})"
            )
            if info.connect_url:
                self.stdout.write(
                    f"Running: Connect worker at {info.connect_url}"
                    f" (pid {info.connect_pid}, log {info.connect_log_file})"
                )
