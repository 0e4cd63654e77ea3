"""The secured runtime the tests share: certificates, SCRAM users and client settings.

`start` makes the certificates (`tests.support.certificates`), starts `devkit.secured.SecuredKafka`
and says how to reach it as each principal; the `secured_kafka` session fixture calls it once
per test process, when a test first asks.
"""

import io
import logging
import secrets
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka.admin import AclOperation, ResourceType
from django.core.management import call_command

from devkit.secured import SecuredInfo, SecuredKafka, SecuredUsers, acl, holds_acl
from devkit.secured_config import TlsPaths
from offsets.kafka import offsets_writer, reading
from offsets.models import Cluster
from tests.support.certificates import CertificateAuthority, ClientFiles
from tests.support.connect_rest import ConnectRest, wait_until

logger = logging.getLogger(__name__)

SUPER_USER = "admin"
WORKER_USER = "connect"
# The dashboard's principals: one over SASL_SSL, one by its client certificate (mutual TLS).
DASHBOARD_USER = "dashboard"
DASHBOARD_CERT_NAME = "dashboard-tls"
# A principal that no test grants anything, by each listener's means.
NOBODY_USER = "nobody"
WORKER_GROUP = "tls-connect"
WORKER_TOPICS = {
    "offsets_topic": "tls-connect-offsets",
    "configs_topic": "tls-connect-configs",
    "status_topic": "tls-connect-status",
}
REST_USER = "dashboard"
# The group ids of the dashboard's readers: assign()-only consumers that commit nothing, but
# librdkafka still finds their group's coordinator.
READER_GROUP_PREFIX = reading.READER_GROUP_PREFIX
# The transactional ids of the dashboard's direct source writes (one per cluster and connector).
TRANSACTIONAL_ID_PREFIX = offsets_writer.TRANSACTIONAL_ID_PREFIX


@dataclass(frozen=True)
class Secured:
    info: SecuredInfo
    tls: TlsPaths
    authority: CertificateAuthority = field(repr=False)
    users: SecuredUsers = field(repr=False)
    dashboard_cert: ClientFiles  # the mutual-TLS principal's certificate
    nobody_cert: ClientFiles  # a certificate whose principal holds no ACL
    rest_cert: ClientFiles  # the REST client certificate the dashboard presents
    rest_password: str = field(repr=False)

    @property
    def setup(self) -> dict:
        """librdkafka settings of the super user (ACLs, topics)."""
        return self.sasl(SUPER_USER)

    def sasl(self, name: str = DASHBOARD_USER, password: str | None = None) -> dict:
        """librdkafka settings of a SCRAM user, as SECURITY.md documents them."""
        found = {
            "bootstrap.servers": self.info.sasl_bootstrap,
            **self.users.client(self.tls, name),
        }
        if password is not None:
            found["sasl.password"] = password
        return found

    def mutual_tls(self, client: ClientFiles | None = None) -> dict:
        """librdkafka settings of a client certificate on the SSL listener."""
        client = client or self.dashboard_cert
        return {
            "bootstrap.servers": self.info.ssl_bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(self.tls.ca),
            "ssl.certificate.location": str(client.cert),
            "ssl.key.location": str(client.key),
            "ssl.key.password": client.key_password,
        }

    def rest_context(self) -> ssl.SSLContext:
        """The TLS client context of the worker's REST API (the CA and the REST client cert)."""
        context = ssl.create_default_context(cafile=str(self.tls.ca))
        context.load_cert_chain(str(self.rest_cert.cert), str(self.rest_cert.key))
        return context

    def rest(self) -> ConnectRest:
        """The tests' own client of the worker's REST API, with the dashboard's credentials."""
        return ConnectRest(
            self.info.connect_url, auth=(REST_USER, self.rest_password), context=self.rest_context()
        )


def viewing_acls(principal: str, *, connect_topics, data_topics, sink_groups) -> dict:
    """SECURITY.md's viewing set for `principal`, each binding under the words a refusal of it
    uses ("READ the topic 'x'"). READ implies DESCRIBE, so a topic read needs no more."""
    topic, group = ResourceType.TOPIC, ResourceType.GROUP
    read, describe = AclOperation.READ, AclOperation.DESCRIBE
    bindings = {}
    for name in (*connect_topics, *data_topics):
        bindings[f"READ the topic {name!r}"] = acl(principal, topic, name, read)
    for name in sink_groups:
        bindings[f"DESCRIBE the consumer group {name!r}"] = acl(principal, group, name, describe)
    bindings[f"READ the consumer groups prefixed {READER_GROUP_PREFIX!r}"] = acl(
        principal, group, READER_GROUP_PREFIX, read, prefixed=True
    )
    return bindings


def editing_acls(principal: str, *, offsets_topics, sink_groups) -> dict:
    """SECURITY.md's editing set for `principal`, each binding under the words a refusal of it
    uses. WRITE implies DESCRIBE, so a transactional id needs no more."""
    topic, group = ResourceType.TOPIC, ResourceType.GROUP
    bindings = {}
    for name in offsets_topics:
        bindings[f"WRITE the topic {name!r}"] = acl(principal, topic, name, AclOperation.WRITE)
    bindings[f"WRITE the transactional ids prefixed {TRANSACTIONAL_ID_PREFIX!r}"] = acl(
        principal,
        ResourceType.TRANSACTIONAL_ID,
        TRANSACTIONAL_ID_PREFIX,
        AclOperation.WRITE,
        prefixed=True,
    )
    for name in sink_groups:
        for operation in (AclOperation.READ, AclOperation.DELETE):
            bindings[f"{operation.name} the consumer group {name!r}"] = acl(
                principal, group, name, operation
            )
    return bindings


def wait_for_acl(settings: dict, binding, *, present: bool) -> None:
    """Wait until the broker's authorizer holds (or no longer holds) `binding`."""
    wait_until(
        lambda: holds_acl(settings, binding, timeout=10),
        lambda held: held == present,
        timeout=30,
        what=f"{binding} {'created' if present else 'deleted'}",
    )


def register(
    name: str,
    bootstrap: str,
    client_config: dict,
    secured,
    monkeypatch,
    *,
    worker: bool = True,
    connect_url: str = "",
    topics: dict = WORKER_TOPICS,
) -> Cluster:
    """Register the secured Connect cluster as add_cluster does, with `client_config`, and
    with the worker's HTTPS URL and credentials unless `worker` is False. `connect_url` and
    `topics` name another Connect cluster on the secured broker (by default the runtime's)."""
    monkeypatch.setenv("SECURED_CONNECT_PASSWORD", secured.rest_password)
    options = [f"--client-config={key}={value}" for key, value in client_config.items()]
    if worker:
        options += [
            f"--connect-url={connect_url or secured.info.connect_url}",
            f"--connect-username={REST_USER}",
            "--connect-password-env=SECURED_CONNECT_PASSWORD",
            f"--connect-ca-file={secured.tls.ca}",
            f"--connect-cert-file={secured.rest_cert.cert}",
            f"--connect-key-file={secured.rest_cert.key}",
        ]
    call_command(
        "add_cluster",
        name,
        f"--bootstrap-servers={bootstrap}",
        f"--offsets-topic={topics['offsets_topic']}",
        f"--configs-topic={topics['configs_topic']}",
        f"--status-topic={topics['status_topic']}",
        *options,
        stdout=io.StringIO(),
    )
    return Cluster.objects.get(name=name)


def start(folder: Path) -> tuple[SecuredKafka, Secured]:
    """Make certificates and users in `folder`, start the secured broker and worker there."""
    authority = CertificateAuthority(folder / "tls")
    tls_files = authority.server_files(secrets.token_hex(12))
    tls = TlsPaths(
        tls_files.ca,
        tls_files.broker_keystore,
        tls_files.rest_keystore,
        tls_files.rest_truststore,
        tls_files.store_password,
    )
    users = SecuredUsers(
        passwords={
            name: secrets.token_hex(12)
            for name in (SUPER_USER, WORKER_USER, DASHBOARD_USER, NOBODY_USER)
        },
        super_user=SUPER_USER,
        worker=WORKER_USER,
    )
    rest_password = secrets.token_hex(12)
    runtime = SecuredKafka(folder / "run")
    info = runtime.start_secured(
        tls=tls,
        users=users,
        rest_users={REST_USER: rest_password},
        group_id=WORKER_GROUP,
        topics=WORKER_TOPICS,
    )
    logger.info("Secured broker and worker ready in %.1f s", info.started_in)
    secured = Secured(
        info=info,
        tls=tls,
        authority=authority,
        users=users,
        dashboard_cert=authority.client_files(DASHBOARD_CERT_NAME, secrets.token_hex(8)),
        nobody_cert=authority.client_files(NOBODY_USER, secrets.token_hex(8)),
        # The dashboard's Connect REST client reads an unencrypted key (offsets.kafka.tls).
        rest_cert=authority.client_files("rest-client", ""),
        rest_password=rest_password,
    )
    return runtime, secured
