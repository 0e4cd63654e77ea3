"""gunicorn's settings for the dashboard's `web` process (deploy/entrypoint web).

Threads, not more processes: a request mostly waits on the database, Kafka or a Connect worker
(an edit's lock check, a live read), and each worker process holds its own Kafka clients and
page cache. Two processes keep one answering while the other restarts. The timeout is the
longest a request may take: an export of a large cluster streams for a while, and a page
that asks a slow worker gives up long before (CONNECT_TIMEOUT, KAFKA_READ_TIMEOUT).
"""

import json
import os
from datetime import UTC, datetime

from gunicorn import glogging

from dashboard.logs import log_format, logging_config

bind = os.getenv("WEB_BIND", "0.0.0.0:8000")
workers = int(os.getenv("WEB_WORKERS", "2"))
worker_class = "gthread"
threads = int(os.getenv("WEB_THREADS", "8"))
timeout = int(os.getenv("WEB_TIMEOUT", "120"))
# SIGTERM: requests in flight get this long, within a container runtime's 10 s.
graceful_timeout = 8
keepalive = 5
# A worker is replaced after this many requests (with jitter): memory a long-lived process
# gathers (caches, fragmentation) is given back without a restart of the service.
max_requests = 5000
max_requests_jitter = 500
# One line per request on standard output (AccessLogger), and gunicorn's own lines through
# the dashboard's logging (LOG_FORMAT: json or plain, messages masked).
accesslog = "-"
errorlog = "-"
logconfig_dict = logging_config(os.getenv("LOG_LEVEL", "INFO").upper())


class AccessLogger(glogging.Logger):
    """gunicorn's logger, with the dashboard's line per request.

    The path is written as data (JSON-escaped, or quoted), never the query string: an
    export's or a search's may hold connector names or partition values.
    """

    def access(self, resp, req, environ, request_time) -> None:
        if not self.cfg.accesslog:
            return
        entry = {
            "method": environ.get("REQUEST_METHOD", ""),
            "path": environ.get("PATH_INFO", ""),
            "status": resp.status_code,
            "bytes": getattr(resp, "sent", 0),
            "ms": round(request_time.total_seconds() * 1000, 1),
        }
        if log_format() == "json":
            at = datetime.now(UTC).isoformat(timespec="milliseconds")
            line = json.dumps({"time": at, "level": "INFO", "logger": "request", **entry})
        else:
            line = "{method} {path!r} {status} {bytes}B {ms}ms".format(**entry)
        self.access_log.info(line)


logger_class = AccessLogger
# Behind a proxy or a Kubernetes ingress: the client's address and scheme come from it.
forwarded_allow_ips = os.getenv("WEB_FORWARDED_ALLOW_IPS", "127.0.0.1")
