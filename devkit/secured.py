"""A secured broker and worker: SASL_SSL (SCRAM-SHA-512) and mutual TLS listeners, ACLs, and
a Connect worker on SASL_SSL serving HTTPS with client certificates and basic auth.

A broker's listeners and authorizer are fixed when it starts, so the secured runtime is a
broker of its own, not the plain one reconfigured. The caller brings the certificates
(`secured_config.TlsPaths`: the tests make them with cryptography) and the SCRAM users, which
the storage tool creates at format time; the super user then grants the worker's principal
its ACLs before the worker starts. Nothing is kept in a state file: the process that starts
it stops it (`stop`), as for `EmbeddedKafka.start_worker`.
"""

import ssl
import time
from dataclasses import dataclass

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from devkit import secured_config
from devkit.embedded import (
    WORKER_MAIN,
    EmbeddedKafka,
    StartedWorker,
    _classpath,
    _format_storage,
    _java,
    free_port,
    wait_for_broker,
    wait_for_worker,
)
from devkit.embedded_config import (
    worker_properties,
    write_basic_auth,
    write_broker_config,
    write_logging,
)
from devkit.secured_config import Ports, TlsPaths
from offsets.kafka import handles


@dataclass(frozen=True)
class SecuredInfo:
    """What `SecuredKafka.start` started, and the addresses of its two client listeners."""

    broker_pid: int
    worker_pid: int
    sasl_bootstrap: str  # SASL_SSL, SCRAM-SHA-512
    ssl_bootstrap: str  # SSL with a client certificate
    connect_url: str  # HTTPS with a client certificate, then basic auth
    started_in: float  # seconds from the storage format to a healthy worker


@dataclass(frozen=True)
class SecuredUsers:
    """The SCRAM users: `super_user` sets up ACLs; `worker` is the worker's principal."""

    passwords: dict  # name -> password, every SCRAM user (the dashboard's too)
    super_user: str
    worker: str

    def client(self, tls: TlsPaths, name: str) -> dict[str, str]:
        return secured_config.librdkafka_sasl_settings(tls, name, self.passwords[name])


def acl(principal: str, kind: ResourceType, name: str, operation: AclOperation, prefixed=False):
    """An ALLOW binding for `principal` on any host."""
    pattern = ResourcePatternType.PREFIXED if prefixed else ResourcePatternType.LITERAL
    return AclBinding(kind, name, pattern, principal, "*", operation, AclPermissionType.ALLOW)


def worker_acls(principal: str) -> list[AclBinding]:
    """What the worker's principal may do: everything on topics, groups and transactional ids
    (its internal topics, its connectors' topics and groups, exactly-once sources), and the
    cluster-level rights of an idempotent, transactional producer that creates topics."""
    everything = [
        acl(principal, kind, "*", AclOperation.ALL)
        for kind in (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID)
    ]
    cluster = [
        acl(principal, ResourceType.BROKER, "kafka-cluster", operation)
        for operation in (
            AclOperation.IDEMPOTENT_WRITE,
            AclOperation.DESCRIBE,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.CREATE,
        )
    ]
    return everything + cluster


@handles.released_after
def create_acls(settings: dict, bindings: list[AclBinding], *, timeout: float = 30.0) -> None:
    """Create `bindings` as the principal of `settings` (a super user); raise on any refusal."""
    client = handles.admin_client(settings)
    for future in client.create_acls(bindings, request_timeout=timeout).values():
        future.result()


def exact_filter(binding: AclBinding) -> AclBindingFilter:
    """The filter matching `binding` alone."""
    return AclBindingFilter(
        binding.restype,
        binding.name,
        binding.resource_pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )


@handles.released_after
def delete_acls(settings: dict, bindings: list[AclBinding], *, timeout: float = 30.0) -> None:
    """Delete exactly `bindings` as the principal of `settings`."""
    client = handles.admin_client(settings)
    filters = [exact_filter(binding) for binding in bindings]
    for future in client.delete_acls(filters, request_timeout=timeout).values():
        future.result()


@handles.released_after
def holds_acl(settings: dict, binding: AclBinding, *, timeout: float = 30.0) -> bool:
    """Whether the broker's authorizer holds `binding` now."""
    client = handles.admin_client(settings)
    return bool(client.describe_acls(exact_filter(binding), request_timeout=timeout).result())


class SecuredKafka(EmbeddedKafka):
    """The secured broker and worker whose files live in `run_dir`."""

    def start_secured(
        self,
        *,
        tls: TlsPaths,
        users: SecuredUsers,
        rest_users: dict[str, str],
        group_id: str,
        topics: dict[str, str],
        timeout: float = 90.0,
    ) -> SecuredInfo:
        """Start the broker, grant the worker's principal its ACLs, start the worker."""
        started = time.monotonic()
        java, jvm = _java(), write_logging(self.run_dir)
        broker_cp, worker_cp = _classpath("broker"), _classpath("worker")
        ports = Ports(free_port(), free_port(), free_port(), free_port())
        server = write_broker_config(
            self.run_dir,
            port=ports.sasl,
            controller_port=ports.controller,
            advertised=f"127.0.0.1:{ports.sasl}",
            extra=secured_config.secured_broker_settings(tls, ports, users.super_user),
        )
        scram = secured_config.scram_format_options(users.passwords)
        _format_storage([java, *jvm, "-cp", broker_cp], server, timeout, scram)
        sasl = f"127.0.0.1:{ports.sasl}"
        setup = {**users.client(tls, users.super_user), "bootstrap.servers": sasl}
        log = self.run_dir.resolve() / "secured-broker.log"
        broker = self._start_process(
            [java, *jvm, "-cp", broker_cp, "kafka.Kafka", str(server)],
            log,
            lambda process: wait_for_broker(
                sasl, timeout=timeout, process=process, log=log, client=setup
            ),
            f"Secured broker at {sasl}",
        )
        try:
            create_acls(setup, worker_acls(f"User:{users.worker}"), timeout=timeout)
            worker, url = self._start_secured_worker(
                java, jvm, worker_cp, tls, sasl, ports.rest, users, rest_users, group_id, topics,
                timeout,
            )  # fmt: skip
        except Exception:
            self._kill(broker)
            raise
        return SecuredInfo(
            broker_pid=broker.pid,
            worker_pid=worker.pid,
            sasl_bootstrap=sasl,
            ssl_bootstrap=f"127.0.0.1:{ports.ssl}",
            connect_url=url,
            started_in=time.monotonic() - started,
        )

    def start_secured_worker(
        self,
        info: SecuredInfo,
        *,
        tls: TlsPaths,
        users: SecuredUsers,
        rest_users: dict[str, str],
        group_id: str,
        topics: dict[str, str],
        timeout: float = 90.0,
    ) -> StartedWorker:
        """One more secured worker on the running secured broker of `info`: another Connect
        cluster (its own group and topics), as the same principal, serving HTTPS with client
        certificates and basic auth. `stop_worker` stops it."""
        java, jvm = _java(), write_logging(self.run_dir)
        worker, url = self._start_secured_worker(
            java, jvm, _classpath("worker"), tls, info.sasl_bootstrap, free_port(), users,
            rest_users, group_id, topics, timeout,
        )  # fmt: skip
        log = self.run_dir.resolve() / f"{group_id}.log"
        return StartedWorker(pid=worker.pid, url=url, log_file=str(log))

    def _start_secured_worker(
        self, java, jvm, classpath, tls, bootstrap, rest_port, users, rest_users, group_id,
        topics, timeout,
    ):  # fmt: skip
        run_dir = self.run_dir.resolve()
        jaas = write_basic_auth(run_dir, group_id, rest_users)
        config = run_dir / f"{group_id}-distributed.properties"
        password = users.passwords[users.worker]
        config.write_text(
            worker_properties(
                bootstrap_servers=bootstrap,
                rest_port=rest_port,
                group_id=group_id,
                topics=topics,
                basic_auth=True,
                extra=secured_config.secured_worker_settings(
                    tls, rest_port, users.worker, password
                ),
            )
        )
        url = f"https://127.0.0.1:{rest_port}"
        # The broker's certificate is a client certificate too: the start-up health check's.
        context = ssl.create_default_context(cafile=str(tls.ca))
        context.load_cert_chain(str(tls.broker_keystore))
        log = run_dir / f"{group_id}.log"
        basic_auth = f"-Djava.security.auth.login.config={jaas}"
        worker = self._start_process(
            [java, *jvm, basic_auth, "-cp", classpath, WORKER_MAIN, str(config)],
            log,
            lambda process: wait_for_worker(
                url,
                timeout=timeout,
                process=process,
                log=log,
                auth=next(iter(rest_users.items())),
                https_context=context,
            ),
            f"Secured Connect worker at {url}",
        )
        return worker, url

    def stop_secured(self, info: SecuredInfo, *, timeout: float = 30.0) -> None:
        """Stop the worker, then the broker (only processes of this run directory)."""
        handles.release_unused()
        for pid in (info.worker_pid, info.broker_pid):
            self._stop_pid(pid, timeout)
