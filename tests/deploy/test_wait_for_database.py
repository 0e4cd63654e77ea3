"""manage.py wait_for_database: the image's processes wait for the database and migrations."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def env(tmp_path, database_url: str) -> dict[str, str]:
    return os.environ | {
        "DATABASE_URL": database_url,
        "RUN_DIR": str(tmp_path / "run"),
        "LOG_FORMAT": "plain",
    }


def wait(tmp_path, database_url: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "wait_for_database", "--seconds", "2", *args],
        cwd=ROOT,
        env=env(tmp_path, database_url),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_database_that_does_not_answer_is_waited_for_then_named_without_its_password(
    tmp_path,
):
    done = wait(tmp_path, "postgres://offsets:pw-not-shown@127.0.0.1:1/offsets")
    assert done.returncode == 1
    assert "Gave up after 2 s: the database does not answer" in done.stderr
    # Said once while waiting, not once a second.
    assert done.stderr.count("Waiting: the database does not answer") == 1
    assert "pw-not-shown" not in done.stderr + done.stdout


def test_migrated_waits_for_every_migration(tmp_path):
    empty = f"sqlite:///{tmp_path / 'empty.sqlite3'}"
    # The database answers: without --migrated that is enough.
    assert wait(tmp_path, empty).returncode == 0
    done = wait(tmp_path, empty, "--migrated")
    assert done.returncode == 1
    assert "migration(s) not applied yet (migrate applies them)" in done.stderr
    migrated = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=ROOT,
        env=env(tmp_path, empty),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrated.returncode == 0, migrated.stderr
    assert wait(tmp_path, empty, "--migrated").returncode == 0
