"""The benchmarks' child processes: started, stopped, and measured from /proc (CPU, RSS), and
the sampler that keeps a measure's peak while a block runs."""

import os
import signal
import statistics
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, log: Path | None = None) -> subprocess.Popen:
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 (the process owns it)
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()


def process_tree(pid: int) -> list[int]:
    """The process and its descendants, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def tree_usage(pid: int) -> tuple[float, int]:
    """CPU seconds (user + system) and RSS bytes of the process tree now."""
    ticks, rss = 0, 0
    for member in process_tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
            rss += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    return ticks / os.sysconf("SC_CLK_TCK"), rss


def percentiles(values: list[float]) -> str:
    if len(values) < 2:
        return f"{len(values)} commits: too few to say"
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return (
        f"{len(values):,} commits: p50 {cuts[49]:.2f} s, p95 {cuts[94]:.2f} s, "
        f"max {max(values):.2f} s"
    )


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def cuts(values: list[float]) -> str:
    if len(values) < 2:
        return f"{len(values)} values: too few"
    q = statistics.quantiles(values, n=100, method="inclusive")
    return f"p50 {q[49]:.2f} s, p95 {q[94]:.2f} s, p99 {q[98]:.2f} s, max {max(values):.2f} s"


def django_workdir(prefix: str) -> Path:
    """A new working folder for a benchmark, its SQLite database, history and run files
    there, and Django set up on them; call before importing anything of the project's models."""
    import tempfile

    import django

    work = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ["DATABASE_URL"] = f"sqlite:///{work / 'bench.sqlite3'}"
    os.environ["OFFSETS_HISTORY_PATH"] = str(work / "history")
    os.environ["RUN_DIR"] = str(work / "run")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    django.setup()
    return work


class Peaks:
    """Sample sizes while a block runs, every `every` seconds, and keep each one's largest:

    with Peaks(child=lambda: tree_usage(pid)[1]) as memory:
        ...
    memory.peaks["child"]
    """

    def __init__(self, every: float = 0.2, **samplers: Callable[[], int]) -> None:
        self.every = every
        self.samplers = samplers
        self.peaks = dict.fromkeys(samplers, 0)

    def __enter__(self) -> "Peaks":
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while True:
            for name, sample in self.samplers.items():
                self.peaks[name] = max(self.peaks[name], sample())
            if self.done.wait(self.every):
                return

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()
