"""Log lines: JSON (one object a line) or plain text, secrets masked.

The JSON shape is {"time", "level", "logger", "message"} plus "error" for an exception, and
the fields of a request's line (deploy/gunicorn.conf.py). Messages go through the same
masking as every config value and trace the dashboard shows (offsets.domain.masking): a
log collector is one more reader. Lines go to standard error, which container runtimes
collect like standard output: commands such as `export_offsets` write their document on
standard output, where a log line would corrupt it.
"""

import json
import logging
import os
from datetime import UTC, datetime

from offsets.domain.masking import mask_text


def log_format() -> str:
    """LOG_FORMAT: "json" (the image's default) or "plain" (elsewhere)."""
    return "json" if os.getenv("LOG_FORMAT", "plain").strip().lower() == "json" else "plain"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": mask_text(record.getMessage()),
        }
        if record.exc_info:
            entry["error"] = mask_text(self.formatException(record.exc_info))
        return json.dumps(entry, ensure_ascii=False)


class UnreadyProbes(logging.Filter):
    """Drop Django's "Service Unavailable" error line for a /readyz or /healthz answer.

    An unready /readyz answers 503 by design, and an orchestrator asks every few seconds: as
    ERROR lines they would bury real errors. The request line (gunicorn's) still records it.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        return not (
            getattr(record, "status_code", None) == 503
            and getattr(request, "path", None) in PROBE_PATHS
        )


PROBE_PATHS = frozenset({"/healthz", "/readyz"})


class PlainFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        return mask_text(super().format(record))


def logging_config(level: str) -> dict:
    """The `logging.config.dictConfig` of the web and the commands (settings.LOGGING)."""
    formatter = log_format()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "json": {"()": JsonFormatter},
            "plain": {"()": PlainFormatter},
        },
        "filters": {"unready_probes": {"()": UnreadyProbes}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": formatter}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "py4j": {"level": "WARNING"},
            "django.request": {"filters": ["unready_probes"]},
            # gunicorn's own lines in the same format; its request lines are formatted by
            # deploy/gunicorn.conf.py and keep gunicorn's handler.
            "gunicorn.error": {"handlers": ["console"], "level": "INFO", "propagate": False},
        },
    }
