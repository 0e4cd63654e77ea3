"""No secret enters the dashboard's image, whatever lies in the checkout it is built from.

An operator's checkout holds deploy/compose.env once it has deployed (the database password,
SECRET_KEY), and may hold keys and passwords in files of their own. The build context leaves
out every env file and every file named like a secret (.containerignore), and the
Containerfile copies only what the app needs, by name. The test plants such files in a fresh
clone, builds it, and reads every layer of the image for what they hold.
"""

import subprocess
import uuid

import pytest

from tests.support.podman import fresh_clone, podman, sandbox_env

# Only `make test-image` runs it: it needs podman and builds the image.
pytestmark = pytest.mark.container

RUN = uuid.uuid4().hex[:8]
# Where an operator's secrets lie, each holding a value of its own.
PLANTED = (
    "deploy/compose.env",
    "deploy/db-password.txt",
    "deploy/prod.env",
    ".env",
    "offsets/secret.key",
    "dashboard/api-token.txt",
    "static/server.pem",
    "templates/credentials.json",
)
CHUNK = 1 << 20


def test_secrets_planted_in_the_checkout_are_in_no_layer_of_the_image(tmp_path):
    clone = fresh_clone(tmp_path / "clone")
    values = {}
    for path in PLANTED:
        values[path] = f"Zq7Planted{uuid.uuid4().hex}"
        (clone / path).parent.mkdir(parents=True, exist_ok=True)
        (clone / path).write_text(f"SECRET_KEY={values[path]}\n")
    tag = f"localhost/connect-offsets-dashboard:planted-{RUN}"
    build = subprocess.run(
        ["deploy/build-image", tag],
        cwd=clone,
        env=sandbox_env(),
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    try:
        found = _held_by_layers(tag, values)
        app = _listing(tag, "/app")
        deploy = _listing(tag, "/app/deploy")
        named_like_secrets = _listing(
            tag, "/app/offsets/kafka/secret_files.py", "/app/offsets/migrations/"
        )
    finally:
        podman("rmi", tag)
    assert found == [], f"planted secrets in the image: {found}"
    # Only what the app needs, and all of it: its modules named like secrets are code.
    assert app == ["dashboard", "deploy", "manage.py", "offsets", "static", "templates", "var"]
    assert deploy == ["entrypoint", "gunicorn.conf.py"]
    assert "/app/offsets/kafka/secret_files.py" in named_like_secrets
    assert "0032_cluster_results_token.py" in named_like_secrets


def _held_by_layers(image: str, values: dict[str, str]) -> list[str]:
    """The planted paths whose value is somewhere in the image's layers.

    `podman image save` writes every layer as an uncompressed tar, so a file's content is
    there as it is; the search keeps the end of each chunk, for a value cut in two.
    """
    needles = {path: value.encode() for path, value in values.items()}
    keep = max(len(needle) for needle in needles.values())
    found = set()
    tail = b""
    with subprocess.Popen(
        ["podman", "image", "save", "--quiet", "--format", "docker-archive", image],
        env=sandbox_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as save:
        while chunk := save.stdout.read(CHUNK):
            window = tail + chunk
            found |= {path for path, needle in needles.items() if needle in window}
            tail = window[-keep:]
        errors = save.stderr.read().decode()
    assert save.returncode == 0, errors[-2000:]
    return sorted(found)


def _listing(image: str, *paths: str) -> list[str]:
    """What `ls` lists of `paths` in the image."""
    listed = podman("run", "--rm", "--network", "host", "--entrypoint", "ls", image, *paths)
    return listed.stdout.split()
