"""A real OpenID provider on loopback (tests/oidc_provider/provider.mjs, node-oidc-provider),
started by the single sign-on tests and told by a state file whom it knows and what to spoil."""

import json
import select
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

PROVIDER_DIR = Path(__file__).resolve().parent.parent / "oidc_provider"
CLIENT_ID = "connect-offsets-dashboard"
# A test secret for a provider that lives as long as the test process.
CLIENT_SECRET = "test-client-secret-for-loopback-only"
START_SECONDS = 30


@dataclass
class TestProvider:
    issuer: str
    state_file: Path
    process: subprocess.Popen

    def set_accounts(self, accounts: dict[str, list[str]], id_token: str | None = None) -> None:
        """Who can log in, with their groups; `id_token` spoils the next ID tokens (provider.mjs)."""
        state = {"accounts": {name: {"groups": groups} for name, groups in accounts.items()}}
        self.state_file.write_text(json.dumps({**state, "id_token": id_token}))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(state_file: Path, dashboard_url: str) -> TestProvider:
    """Start the provider for a dashboard at `dashboard_url`; wait until it listens."""
    if not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        raise RuntimeError(f"oidc-provider is not installed: run npm ci in {PROVIDER_DIR}")
    port = free_port()
    provider = TestProvider(f"http://127.0.0.1:{port}", state_file, None)  # type: ignore[arg-type]
    provider.set_accounts({})
    provider.process = subprocess.Popen(
        [
            "node",
            str(PROVIDER_DIR / "provider.mjs"),
            str(port),
            str(state_file),
            CLIENT_ID,
            CLIENT_SECRET,
            f"{dashboard_url}/oidc/callback/",
            f"{dashboard_url}/login/",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    _wait_until_listening(provider.process)
    return provider


def _wait_until_listening(process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the test provider exited with {process.returncode}")
        ready, _, _ = select.select([process.stdout], [], [], 0.5)
        if ready and process.stdout.readline().startswith("listening"):
            return
    process.kill()
    raise RuntimeError(f"the test provider did not listen within {START_SECONDS} s")
