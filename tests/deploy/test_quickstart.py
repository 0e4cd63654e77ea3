"""The README's deploy steps are deploy/quickstart's, and compose-env writes a usable env file.

`make test-image` runs deploy/quickstart in a fresh clone (tests/deploy/test_image.py): the
README's block of commands must be that script's, word for word, or what is tested is not
what a new user types.
"""

import re
import shutil
import stat
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import yaml

ROOT = Path(__file__).resolve().parents[2]
STEPS_MARK = "# The steps\n"


def readme_steps() -> str:
    """The fenced block of the README's "Running it for real"."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Running it for real") :]
    return re.search(r"```sh\n(.*?)```\n", section, re.DOTALL)[1]


def test_the_readmes_deploy_steps_are_the_quickstart_scripts_word_for_word():
    script = (ROOT / "deploy" / "quickstart").read_text()
    assert script.count(STEPS_MARK) == 1
    assert readme_steps() == script.split(STEPS_MARK)[1]


def test_the_readme_fits_in_twelve_kilobytes():
    assert len((ROOT / "README.md").read_bytes()) <= 12 * 1024


def compose_env(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    deploy = tmp_path / "deploy"
    deploy.mkdir(parents=True, exist_ok=True)
    for name in ("compose-env", "compose.env.example"):
        shutil.copy2(ROOT / "deploy" / name, deploy / name)
    return subprocess.run(
        [str(deploy / "compose-env"), *args],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=30,
    )


def values(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def test_compose_env_writes_new_secrets_readable_by_its_owner_only(tmp_path):
    done = compose_env(tmp_path, DASHBOARD_HOST="offsets.example.org")
    assert done.returncode == 0, done.stdout + done.stderr
    written = tmp_path / "deploy" / "compose.env"
    env = values(written)
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert "change-me" not in written.read_text().replace("# ", "")
    assert urlsplit(env["DATABASE_URL"]).password == env["POSTGRES_PASSWORD"]
    assert len(env["POSTGRES_PASSWORD"]) >= 24
    # What the settings ask of SECRET_KEY with DEBUG off.
    assert len(env["SECRET_KEY"]) >= 50 and len(set(env["SECRET_KEY"])) >= 5
    assert env["ALLOWED_HOSTS"] == "offsets.example.org"
    assert env["CSRF_TRUSTED_ORIGINS"] == "https://offsets.example.org"
    assert env.keys() == values(ROOT / "deploy" / "compose.env.example").keys()
    again = compose_env(tmp_path / "again", DASHBOARD_HOST="offsets.example.org")
    assert values(tmp_path / "again" / "deploy" / "compose.env")["SECRET_KEY"] != env["SECRET_KEY"]
    assert again.returncode == 0


def test_compose_env_keeps_an_existing_file(tmp_path):
    (tmp_path / "deploy").mkdir()
    kept = tmp_path / "deploy" / "compose.env"
    kept.write_text("SECRET_KEY=the-one-the-sessions-were-signed-with\n")
    done = compose_env(tmp_path, DASHBOARD_HOST="offsets.example.org")
    assert done.returncode == 0 and "kept" in done.stdout
    assert kept.read_text() == "SECRET_KEY=the-one-the-sessions-were-signed-with\n"


def test_compose_env_asks_for_the_dashboards_host_name(tmp_path):
    done = compose_env(tmp_path)
    assert done.returncode == 2 and "DASHBOARD_HOST" in done.stdout
    assert not (tmp_path / "deploy" / "compose.env").exists()


def test_the_scheduler_gets_the_spark_of_the_memory_budget_docs_deploy_states(tmp_path):
    # docs/deploy.md, "Memory": the scheduler's container stays within its budget because its
    # Spark runs two task slots (one Python worker each) and a 1 GB driver heap, whatever the
    # host's cores; `local[*]` on a large host gave one worker per core and no stated bound.
    done = compose_env(tmp_path, DASHBOARD_HOST="offsets.example.org")
    assert done.returncode == 0, done.stdout + done.stderr
    env = values(tmp_path / "deploy" / "compose.env")
    assert env["SPARK_MASTER"] == "local[2]"
    conf = dict(item.split("=", 1) for item in env["SPARK_CONF"].split(","))
    assert conf["spark.driver.memory"] == "1g"
    budget = (ROOT / "docs" / "deploy.md").read_text()
    assert "`SPARK_MASTER=local[2]`" in budget and "`SPARK_CONF=spark.driver.memory=1g`" in budget


def test_compose_env_with_spark_connect_points_the_refresh_at_the_compose_server(tmp_path):
    done = compose_env(tmp_path, "--spark-connect", DASHBOARD_HOST="offsets.example.org")
    assert done.returncode == 0, done.stdout + done.stderr
    written = tmp_path / "deploy" / "compose.env"
    env = values(written)
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    # The settings refuse SPARK_MASTER beside SPARK_REMOTE, and a SPARK_CONF that is not
    # spark.sql.* with it: the local Spark's lines are gone, the comment above them too.
    assert "SPARK_MASTER" not in env and "SPARK_CONF" not in env
    assert "memory budget" not in written.read_text()
    token = env["SPARK_CONNECT_AUTHENTICATE_TOKEN"]
    assert len(token) >= 24
    port = env["SPARK_CONNECT_BIND"].rsplit(":", 1)[1]
    # "localhost": PySpark sends a token without TLS only to a local server.
    assert env["SPARK_REMOTE"] == f"sc://localhost:{port}/;token={token}"
    assert env["SPARK_CONNECT_BIND"].startswith("127.0.0.1:")
    assert env["SPARK_CONNECT_MASTER"] == "local[2]" and env["SPARK_CONNECT_MEMORY"] == "1g"
    other = compose_env(tmp_path / "other", "--spark-connect", DASHBOARD_HOST="o.example.org")
    assert other.returncode == 0
    assert (
        values(tmp_path / "other" / "deploy" / "compose.env")["SPARK_REMOTE"] != env["SPARK_REMOTE"]
    )


def test_compose_env_with_spark_connect_changes_an_existing_file_and_keeps_its_secrets(tmp_path):
    assert compose_env(tmp_path, DASHBOARD_HOST="offsets.example.org").returncode == 0
    written = tmp_path / "deploy" / "compose.env"
    before = values(written)
    done = compose_env(tmp_path, "--spark-connect")
    assert done.returncode == 0 and "replaced" in done.stdout, done.stdout + done.stderr
    after = values(written)
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert {key: before[key] for key in after if key in before} == {
        key: value for key, value in after.items() if key in before
    }
    assert before.keys() - after.keys() == {"SPARK_MASTER", "SPARK_CONF"}
    assert "SPARK_REMOTE" in after
    again = compose_env(tmp_path, "--spark-connect")
    assert again.returncode == 0 and "kept" in again.stdout
    assert values(written) == after


def test_the_spark_connect_service_is_optional_and_shares_the_history_volume():
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    services = compose["services"]
    server = services["spark-connect"]
    assert server["profiles"] == ["spark-connect"]
    assert all(
        "profiles" not in service for name, service in services.items() if server is not service
    )
    assert server["command"] == ["spark-connect"]
    # The history its tasks write is the storage the scheduler and web read, at their path.
    assert server["image"] == services["scheduler"]["image"]
    assert server["volumes"] == services["scheduler"]["volumes"] == services["web"]["volumes"]
    assert server["env_file"] == services["scheduler"]["env_file"]
