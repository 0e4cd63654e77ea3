"""A bounded load test on loopback: the real app server, real logins, a mix of pages and API.

Shared by the load test in the suite (tests/deploy/test_load.py: a small run that must
answer every request with 200) and ``make bench-load`` (tests/bench/bench_load.py: a larger
run that prints p50/p95/max per URL). The server is waitress, a production WSGI server, in a
process of its own over the given database; each simulated user is a thread with its own
HTTP client and session, logged in through the login form.
"""

import logging
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from devkit.embedded import free_port
from tests.support.production_env import loopback_production_env

BASE_DIR = Path(__file__).resolve().parents[2]
USER_PASSWORD = "load-test-password"

# One log line per request would drown the report.
logging.getLogger("httpx").setLevel(logging.WARNING)

CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@dataclass(frozen=True)
class Target:
    """One kind of request a user makes: a label for the report, a path, htmx headers."""

    label: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)


def htmx(target: str) -> dict[str, str]:
    return {"HX-Request": "true", "HX-Target": target}


def demo_targets(cluster: str = "demo") -> list[Target]:
    """The pages, htmx partials and API calls of a demo cluster a dashboard user makes."""
    source, sink = "orders-cdc-eos", "s3-sink-orders"
    connectors = f"/clusters/{cluster}/connectors/"
    api = f"/api/v1/clusters/{cluster}"
    return [
        Target("home", "/"),
        Target("home #clusters (htmx poll)", "/", {"HX-Request": "true"}),
        Target("connectors", connectors),
        Target(
            "connectors #table (htmx)", f"{connectors}?sort=-lag_records", htmx("connectors-table")
        ),
        Target("connector (source)", f"{connectors}{source}/"),
        Target("connector #partitions (htmx)", f"{connectors}{source}/", htmx("partitions")),
        Target("connector #progress (htmx)", f"{connectors}{source}/", htmx("progress")),
        Target("connector (sink)", f"{connectors}{sink}/"),
        Target("edits", f"/clusters/{cluster}/edits/"),
        Target("api clusters", "/api/v1/clusters/"),
        Target("api connectors", f"{api}/connectors/"),
        Target("api offsets", f"{api}/connectors/{source}/offsets/"),
        Target("api lag", f"{api}/connectors/{sink}/lag/"),
        Target("api refreshes", f"{api}/refreshes/"),
    ]


class AppServer:
    """waitress serving dashboard.wsgi on a free loopback port, in a process of its own."""

    def __init__(self, env: dict[str, str], *, threads: int = 8, log: Path | None = None) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.support.load_settings",
            **loopback_production_env(),
            "LOG_LEVEL": "WARNING",
            **env,
        }
        self.threads = threads
        self.log = log
        self.process: subprocess.Popen | None = None
        self._output = None

    def start(self, timeout: float = 60.0) -> "AppServer":
        self._output = open(self.log, "ab") if self.log else None  # noqa: SIM115
        output = self._output or subprocess.DEVNULL
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "waitress",
                f"--listen=127.0.0.1:{self.port}",
                f"--threads={self.threads}",
                # Connections beyond the threads wait in the queue instead of being refused.
                "--connection-limit=200",
                "--backlog=256",
                "dashboard.wsgi:application",
            ],
            cwd=BASE_DIR,
            env=self.env,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the app server exited with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
                if httpx.get(f"{self.base_url}/login/", timeout=10).status_code == 200:
                    return self
            except (OSError, httpx.HTTPError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the app server did not answer on {self.base_url}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._output is not None:
            self._output.close()
            self._output = None

    def __enter__(self) -> "AppServer":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


def login(base_url: str, username: str, password: str = USER_PASSWORD) -> httpx.Client:
    """A client logged in through the login form (CSRF cookie and token, then the session)."""
    client = httpx.Client(base_url=base_url, timeout=60, follow_redirects=False)
    form = client.get("/login/")
    form.raise_for_status()
    token = CSRF_INPUT.search(form.text)
    if token is None:
        raise RuntimeError("no CSRF token on the login page")
    response = client.post(
        "/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)},
        headers={"Referer": f"{base_url}/login/"},
    )
    if response.status_code != 302 or "sessionid" not in client.cookies:
        raise RuntimeError(f"login of {username} failed: {response.status_code}")
    return client


@dataclass(frozen=True)
class Sample:
    label: str
    status: int  # 0: no answer (connection error, timeout)
    seconds: float
    started: float  # time.monotonic()
    error: str = ""
    during: bool = False  # the background work (a refresh) was running when it started


@dataclass
class LoadResult:
    samples: list[Sample]
    seconds: float
    logins: int

    @property
    def errors(self) -> list[Sample]:
        return [s for s in self.samples if s.status != 200]

    def by_label(self) -> dict[str, list[Sample]]:
        groups: dict[str, list[Sample]] = defaultdict(list)
        for sample in self.samples:
            groups[sample.label].append(sample)
        return dict(groups)


def run_load(
    base_url: str,
    usernames: list[str],
    targets: list[Target],
    *,
    requests: int,
    busy: Callable[[], bool] = lambda: False,
) -> LoadResult:
    """Log every user in at once, then share ``requests`` requests among them, round robin.

    Every user thread starts together (a barrier), so the server sees len(usernames)
    concurrent sessions. ``busy`` says whether the background work is running; each sample
    records it, so a report can tell requests served during a refresh from the others.
    """
    samples: list[Sample] = []
    lock = threading.Lock()
    counter = iter(range(requests))
    barrier = threading.Barrier(len(usernames))
    failures: list[BaseException] = []

    def next_index() -> int | None:
        with lock:
            return next(counter, None)

    def user(username: str) -> None:
        try:
            client = login(base_url, username)
        except BaseException as exc:
            failures.append(exc)
            barrier.abort()
            return
        try:
            barrier.wait()
            while (index := next_index()) is not None:
                target = targets[index % len(targets)]
                during = busy()
                started = time.monotonic()
                try:
                    response = client.get(target.path, headers=target.headers)
                    status, error = response.status_code, ""
                    if status != 200:
                        error = response.text[:300]
                except httpx.HTTPError as exc:
                    status, error = 0, f"{type(exc).__name__}: {exc}"
                seconds = time.monotonic() - started
                with lock:
                    samples.append(Sample(target.label, status, seconds, started, error, during))
        except threading.BrokenBarrierError:
            return
        except BaseException as exc:
            failures.append(exc)
        finally:
            client.close()

    started = time.monotonic()
    threads = [threading.Thread(target=user, args=(name,), daemon=True) for name in usernames]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"{len(failures)} user(s) failed; first: {failures[0]!r}")
    return LoadResult(samples, time.monotonic() - started, logins=len(usernames))


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if len(ordered) < 2:
        return ordered[0] if ordered else float("nan")
    return statistics.quantiles(ordered, n=100, method="inclusive")[round(fraction * 100) - 1]


def report(result: LoadResult, title: str) -> str:
    """p50/p95/max in ms and the errors of each kind of request, one line each."""
    lines = [
        f"{title}: {len(result.samples)} requests by {result.logins} users in "
        f"{result.seconds:.1f}s ({len(result.samples) / result.seconds:.0f} req/s), "
        f"{len(result.errors)} errors, {sum(s.during for s in result.samples)} during the refresh",
        f"  {'request':34} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'errors':>6}",
    ]
    for label, samples in result.by_label().items():
        ms = [s.seconds * 1000 for s in samples]
        errors = sum(s.status != 200 for s in samples)
        lines.append(
            f"  {label:34} {len(samples):>5} {percentile(ms, 0.5):>8.0f} "
            f"{percentile(ms, 0.95):>8.0f} {max(ms):>8.0f} {errors:>6}"
        )
    everything = [s.seconds * 1000 for s in result.samples]
    lines.append(
        f"  {'all':34} {len(everything):>5} {percentile(everything, 0.5):>8.0f} "
        f"{percentile(everything, 0.95):>8.0f} {max(everything):>8.0f} {len(result.errors):>6}"
    )
    for sample in result.errors[:5]:
        lines.append(f"  ! {sample.label}: {sample.status} {sample.error[:200]!r}")
    return "\n".join(lines)


def create_users(count: int, prefix: str = "load") -> list[str]:
    """``count`` users with the load test's password (hashed with the first hasher)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from offsets.rights.roles import VIEWERS_GROUP, ensure_role_groups

    password = make_password(USER_PASSWORD)  # one hash for all: same password, same cost
    model = get_user_model()
    names = [f"{prefix}{index:02d}" for index in range(count)]
    model.objects.bulk_create([model(username=name, password=password) for name in names])
    viewers = ensure_role_groups()[VIEWERS_GROUP]
    viewers.user_set.add(*model.objects.filter(username__in=names))
    return names
