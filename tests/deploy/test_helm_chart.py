"""The Helm chart (deploy/helm/offsets-dashboard), rendered by helm and read back as YAML.

`helm lint` and `helm template` with the chart's defaults, with the external-PostgreSQL example
(its secrets in Secrets of the user's), and with secrets given as values, planted with strings
found nowhere else. No cluster is needed: only the helm binary, which `make helm` builds into
var/bin from its Go module (`make test` and `make test-fast` build it first; run alone, the
`helm` fixture calls `make helm` itself).
"""

import base64
import fcntl
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "offsets-dashboard"
EXAMPLE = ROOT / "deploy" / "helm" / "examples" / "external-postgres.yaml"
# The image's user (Containerfile: useradd --uid 10001, USER 10001).
IMAGE_UID = 10001
DATA = "/var/lib/offsets"

# Secrets given as values: each distinctive, so that a copy anywhere in the output is found.
PLANTED = {
    "SECRET_KEY": "planted-secret-key-Zq8rVw2mXc4tLp7sNb1yHd6fKj3gTa9uEo5iRw0x",
    "METRICS_TOKEN": "planted-metrics-token-Yh4nQe7v",
    "EMAIL_HOST_PASSWORD": "planted-smtp-password-Bc2kWm9s",
    "PGPASSWORD": "planted-database-password-Ur5tGx1z",
    "ca.pem": "planted-kafka-ca-Mf6pDs3q",
    "sasl-password": "planted-sasl-password-Vj8wLa4e",
}
PLANTED_VALUES = {
    "existingSecret": "",
    "secretEnv": {
        "SECRET_KEY": PLANTED["SECRET_KEY"],
        "METRICS_TOKEN": PLANTED["METRICS_TOKEN"],
        "EMAIL_HOST_PASSWORD": PLANTED["EMAIL_HOST_PASSWORD"],
    },
    "postgresql": {"existingSecret": "", "password": PLANTED["PGPASSWORD"]},
    "kafkaClient": {
        "existingSecret": "",
        "files": {"ca.pem": PLANTED["ca.pem"], "sasl-password": PLANTED["sasl-password"]},
    },
}


@pytest.fixture(scope="session")
def helm() -> Path:
    """The helm binary: $HELM, or var/bin/helm, built by `make helm` when missing."""
    if os.environ.get("HELM"):
        return Path(os.environ["HELM"])
    binary = ROOT / "var" / "bin" / "helm"
    (ROOT / "var").mkdir(exist_ok=True)
    # Two test processes may both find it missing: one builds, the other waits for it.
    with open(ROOT / "var" / ".helm-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.access(binary, os.X_OK):
            built = subprocess.run(
                ["make", "--no-print-directory", "helm"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=1800,
            )
            if built.returncode != 0:
                pytest.fail(
                    "helm is missing and `make helm` could not build it "
                    f"(it needs Go and the Go module proxy):\n{built.stdout}{built.stderr}"
                )
    return binary


def run_helm(helm: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([helm, *args], capture_output=True, text=True, timeout=120)


def render(helm: Path, *values: Path, sets: tuple[str, ...] = ()) -> list[dict]:
    """`helm template` of the chart: its objects, hooks included."""
    args = ["template", "offsets-dashboard", str(CHART), "--namespace", "dash"]
    for path in values:
        args += ["--values", str(path)]
    for item in sets:
        args += ["--set", item]
    done = run_helm(helm, *args)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def one(objects: list[dict], kind: str, name: str) -> dict:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def pod_specs(objects: list[dict]) -> dict[str, dict]:
    """The pod template of each Deployment and Job, by its object's name."""
    return {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]
        for o in objects
        if o["kind"] in ("Deployment", "Job")
    }


@pytest.fixture(scope="module")
def planted_values(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("helm") / "planted.yaml"
    path.write_text(yaml.safe_dump(PLANTED_VALUES))
    return path


@pytest.fixture(scope="module")
def defaults(helm) -> list[dict]:
    return render(helm)


@pytest.fixture(scope="module")
def example(helm) -> list[dict]:
    return render(helm, EXAMPLE)


@pytest.fixture(scope="module")
def planted(helm, planted_values) -> list[dict]:
    return render(helm, EXAMPLE, planted_values)


@pytest.mark.parametrize("values", [(), (EXAMPLE,)], ids=["defaults", "example"])
def test_it_passes_helm_lint(helm, values):
    args = ["lint", "--strict", str(CHART)] + [f"--values={path}" for path in values]
    done = run_helm(helm, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 chart(s) failed" in done.stdout


@pytest.mark.parametrize("rendered", ["defaults", "example"])
def test_the_web_pods_probe_the_health_endpoints_on_the_port_gunicorn_binds(rendered, request):
    objects = request.getfixturevalue(rendered)
    [web] = pod_specs(objects)["offsets-dashboard-web"]["containers"]
    assert web["args"] == ["web"]
    assert web["ports"] == [{"name": "http", "containerPort": 8000}]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert web[probe]["httpGet"] == {"path": "/healthz", "port": "http"}, probe
    # The startup probe outlasts the entrypoint's wait for the database (60 s by default).
    startup = web["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] > 60
    config = one(objects, "ConfigMap", "offsets-dashboard-config")
    assert config["data"]["WEB_BIND"] == "0.0.0.0:8000"
    service = one(objects, "Service", "offsets-dashboard")
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    assert service["spec"]["selector"]["app.kubernetes.io/component"] == "web"


def test_the_readiness_probe_can_be_pointed_at_readyz_and_the_port_moved(helm):
    objects = render(helm, sets=("web.readinessProbe.httpGet.path=/readyz", "web.port=9000"))
    [web] = pod_specs(objects)["offsets-dashboard-web"]["containers"]
    assert web["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert web["ports"] == [{"name": "http", "containerPort": 9000}]
    config = one(objects, "ConfigMap", "offsets-dashboard-config")
    assert config["data"]["WEB_BIND"] == "0.0.0.0:9000"


def test_the_scheduler_runs_the_entrypoints_scheduler_without_an_http_probe(defaults, example):
    for objects, replicas in ((defaults, 1), (example, 2)):
        deployment = one(objects, "Deployment", "offsets-dashboard-scheduler")
        assert deployment["spec"]["replicas"] == replicas
        [scheduler] = deployment["spec"]["template"]["spec"]["containers"]
        assert scheduler["args"] == ["scheduler"]
        # It serves no HTTP: a probe would have nothing to ask.
        assert not {"ports", "livenessProbe", "readinessProbe", "startupProbe"} & set(scheduler)


@pytest.mark.parametrize("rendered", ["defaults", "example", "planted"])
def test_every_pod_runs_as_the_images_user_with_a_read_only_root(rendered, request):
    objects = request.getfixturevalue(rendered)
    specs = pod_specs(objects)
    assert set(specs) == {
        "offsets-dashboard-web",
        "offsets-dashboard-scheduler",
        "offsets-dashboard-migrate",
    }
    for name, spec in specs.items():
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True, name
        assert pod["runAsUser"] == IMAGE_UID and pod["fsGroup"] == IMAGE_UID, name
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert spec["automountServiceAccountToken"] is False, name
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["runAsNonRoot"] is True, name
            assert context["runAsUser"] == IMAGE_UID, name
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["readOnlyRootFilesystem"] is True, name
            assert context["capabilities"] == {"drop": ["ALL"]}, name
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            volumes = {v["name"]: v for v in spec["volumes"]}
            # The root is read-only: what the processes write is mounted.
            assert "emptyDir" in volumes[mounts["/tmp"]], name


def test_the_paths_the_image_writes_are_on_the_data_volume(defaults, example):
    """The history and the refresh logs (the image's OFFSETS_HISTORY_PATH and RUN_DIR) are
    under the mount web and scheduler share: the chart's claim, or the user's."""
    image_env = dict(re.findall(r"\b(OFFSETS_HISTORY_PATH|RUN_DIR)=(\S+)", _containerfile()))
    assert set(image_env) == {"OFFSETS_HISTORY_PATH", "RUN_DIR"}
    assert all(path.startswith(DATA + "/") for path in image_env.values())
    for objects in (defaults, example):
        specs = pod_specs(objects)
        claims = set()
        for name in ("offsets-dashboard-web", "offsets-dashboard-scheduler"):
            [container] = specs[name]["containers"]
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            volumes = {v["name"]: v for v in specs[name]["volumes"]}
            claims.add(volumes[mounts[DATA]]["persistentVolumeClaim"]["claimName"])
        assert claims == {"offsets-dashboard-data"}
        claim = one(objects, "PersistentVolumeClaim", "offsets-dashboard-data")
        assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    example_claim = one(example, "PersistentVolumeClaim", "offsets-dashboard-data")
    assert example_claim["spec"]["accessModes"] == ["ReadWriteMany"]


@pytest.mark.parametrize("rendered", ["defaults", "example", "planted"])
def test_the_migrate_job_runs_before_every_install_and_upgrade(rendered, request):
    objects = request.getfixturevalue(rendered)
    job = one(objects, "Job", "offsets-dashboard-migrate")
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert "before-hook-creation" in annotations["helm.sh/hook-delete-policy"]
    [container] = job["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["migrate"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    # What it reads exists before it: hook copies made at a lower weight, or the user's Secret.
    hooks = {
        o["metadata"]["name"]: o
        for o in objects
        if "helm.sh/hook" in o["metadata"].get("annotations", {}) and o["kind"] != "Job"
    }
    for source in container["envFrom"]:
        [(kind, ref)] = source.items()
        if ref["name"] in hooks:
            copy = hooks[ref["name"]]["metadata"]["annotations"]
            assert copy["helm.sh/hook"] == "pre-install,pre-upgrade"
            assert int(copy["helm.sh/hook-weight"]) < int(annotations["helm.sh/hook-weight"])
        else:
            assert kind == "secretRef" and ref["name"] == "offsets-env"


def test_every_process_requests_resources_and_has_a_memory_limit(defaults):
    for name, spec in pod_specs(defaults).items():
        [container] = spec["containers"]
        resources = container["resources"]
        assert set(resources["requests"]) == {"cpu", "memory"}, name
        assert "memory" in resources["limits"], name
    scheduler = one(defaults, "Deployment", "offsets-dashboard-scheduler")
    [container] = scheduler["spec"]["template"]["spec"]["containers"]
    # Its Spark driver peaked at 1,086 MB during a refresh (docs/deploy.md).
    assert container["resources"]["limits"]["memory"] == "2Gi"


def test_no_secret_value_leaves_a_secret_object(planted):
    """Secrets given as values are in the chart's Secrets only, base64 as Kubernetes keeps
    them, and reach the pods by reference: never in a pod's env, a ConfigMap or an annotation."""
    forms = {
        name: (value, base64.b64encode(value.encode()).decode()) for name, value in PLANTED.items()
    }
    held = {}
    for obj in planted:
        text = yaml.safe_dump(obj)
        if obj["kind"] == "Secret":
            for key, data in obj.get("data", {}).items():
                held.setdefault(obj["metadata"]["name"], {})[key] = base64.b64decode(data).decode()
            continue
        for name, (value, encoded) in forms.items():
            assert value not in text and encoded not in text, (name, obj["kind"])
    # The planted values did reach the chart: each is in a Secret of it.
    assert held["offsets-dashboard-env"] == held["offsets-dashboard-migrate-env"]
    assert held["offsets-dashboard-env"] == {
        key: PLANTED[key]
        for key in ("SECRET_KEY", "METRICS_TOKEN", "EMAIL_HOST_PASSWORD", "PGPASSWORD")
    }
    assert held["offsets-dashboard-kafka-client"] == {
        key: PLANTED[key] for key in ("ca.pem", "sasl-password")
    }
    specs = pod_specs(planted)
    for name, spec in specs.items():
        [container] = spec["containers"]
        for variable in container.get("env", []):
            value = variable.get("value", "")
            assert not any(secret in value for secret in PLANTED.values()), (name, variable)
        secret_refs = {s["secretRef"]["name"] for s in container["envFrom"] if "secretRef" in s}
        copy = "-migrate" if name.endswith("-migrate") else ""
        assert secret_refs == {f"offsets-dashboard{copy}-env"}, name
    web_volumes = {v["name"]: v for v in specs["offsets-dashboard-web"]["volumes"]}
    assert web_volumes["kafka-client"]["secret"]["secretName"] == "offsets-dashboard-kafka-client"


@pytest.mark.parametrize("rendered", ["defaults", "example"])
def test_existing_secrets_mode_renders_no_secret(rendered, request):
    objects = request.getfixturevalue(rendered)
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Secret"] == []
    if rendered == "defaults":
        return
    specs = pod_specs(objects)
    for name, spec in specs.items():
        [container] = spec["containers"]
        env = {variable["name"]: variable for variable in container["env"]}
        # The address carries the user, never a password: libpq reads PGPASSWORD itself.
        url = env["DATABASE_URL"]["value"]
        assert url == "postgres://offsets@postgres.databases.svc.cluster.local:5432/offsets"
        assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"] == {
            "name": "offsets-db",
            "key": "password",
        }
        assert {"secretRef": {"name": "offsets-env"}} in container["envFrom"], name
    for name in ("offsets-dashboard-web", "offsets-dashboard-scheduler"):
        volumes = {v["name"]: v for v in specs[name]["volumes"]}
        assert volumes["kafka-client"]["secret"]["secretName"] == "offsets-kafka"
        [container] = specs[name]["containers"]
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        assert mounts["kafka-client"] == {
            "name": "kafka-client",
            "mountPath": "/etc/offsets-dashboard/kafka",
            "readOnly": True,
        }


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (("existingSecret=mine", "secretEnv.SECRET_KEY=x"), "existingSecret replaces"),
        (("existingSecret=mine", "postgresql.password=x"), "existingSecret replaces"),
        (("postgresql.existingSecret=db", "postgresql.password=x"), "keep one"),
        (("kafkaClient.existingSecret=k", "kafkaClient.files.a=x"), "keep one"),
    ],
    ids=["env", "database-password", "password-twice", "kafka-files"],
)
def test_it_refuses_a_secret_given_two_ways(helm, sets, message):
    args = ["template", "offsets-dashboard", str(CHART)]
    for item in sets:
        args += ["--set", item]
    done = run_helm(helm, *args)
    assert done.returncode != 0
    assert message in done.stderr


def _containerfile() -> str:
    return (ROOT / "Containerfile").read_text()
