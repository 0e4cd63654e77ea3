"""The secured broker's and worker's settings: SASL_SSL (SCRAM-SHA-512), mutual TLS, ACLs and
an HTTPS REST API.

Pure functions over the files a caller made (a CA, keystores: `devkit.secured.TlsPaths`);
`devkit.secured` writes them next to the plain runtime's settings (`embedded_config`), which
they extend.
"""

from dataclasses import dataclass, field
from pathlib import Path

SCRAM = "SCRAM-SHA-512"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# The broker's certificate's subject: its own principal on the SSL listeners (inter-broker and
# controller traffic), a super user.
BROKER_PRINCIPAL = "User:CN=broker"


@dataclass(frozen=True)
class TlsPaths:
    """The files the secured runtime reads; the caller makes them (tests: cryptography)."""

    ca: Path  # PEM
    broker_keystore: Path  # PEM: private key (unencrypted PKCS8) then certificate chain
    rest_keystore: Path  # PKCS12
    rest_truststore: Path  # PKCS12 with the CA as a trusted entry
    store_password: str = field(repr=False)


@dataclass(frozen=True)
class Ports:
    sasl: int
    ssl: int
    controller: int
    rest: int


def scram_format_options(users: dict[str, str]) -> list[str]:
    """The storage tool's options creating each SCRAM user (name -> password) at format time."""
    options: list[str] = []
    for name, password in users.items():
        for value in (name, password):
            # The tool's own parser splits on these; the tests' names and passwords avoid them.
            if not value or any(char in value for char in ',=[]" '):
                raise ValueError(f"A SCRAM name or password the storage tool cannot take: {name}")
        options += ["--add-scram", f"{SCRAM}=[name={name},password={password}]"]
    return options


def secured_broker_settings(tls: TlsPaths, ports: Ports, super_user: str) -> dict[str, str]:
    """A SASL_SSL listener for users, an SSL one demanding client certificates, ACLs on.

    The broker's own traffic (inter-broker, controller) runs on SSL with its certificate, so
    no listener trusts an unauthenticated principal.
    """
    return {
        "listeners": (
            f"SASL_SSL://127.0.0.1:{ports.sasl},SSL://127.0.0.1:{ports.ssl},"
            f"CONTROLLER://127.0.0.1:{ports.controller}"
        ),
        "advertised.listeners": f"SASL_SSL://127.0.0.1:{ports.sasl},SSL://127.0.0.1:{ports.ssl}",
        "inter.broker.listener.name": "SSL",
        "listener.security.protocol.map": "CONTROLLER:SSL,SSL:SSL,SASL_SSL:SASL_SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls.broker_keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls.ca),
        "ssl.client.auth": "required",
        "listener.name.sasl_ssl.ssl.client.auth": "none",
        "sasl.enabled.mechanisms": SCRAM,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": f"{SCRAM_LOGIN_MODULE} required;",
        "authorizer.class.name": AUTHORIZER,
        "allow.everyone.if.no.acl.found": "false",
        "super.users": f"User:{super_user};{BROKER_PRINCIPAL}",
    }


def sasl_client_settings(tls: TlsPaths, username: str, password: str) -> dict[str, str]:
    """A Java client's SASL_SSL settings (the worker's own, and its connectors' clients)."""
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": SCRAM,
        "sasl.jaas.config": (
            f'{SCRAM_LOGIN_MODULE} required username="{username}" password="{password}";'
        ),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls.ca),
    }


def librdkafka_sasl_settings(tls: TlsPaths, username: str, password: str) -> dict[str, str]:
    """librdkafka's settings for the same user: what the dashboard's docs tell users to set."""
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": SCRAM,
        "sasl.username": username,
        "sasl.password": password,
        "ssl.ca.location": str(tls.ca),
    }


def secured_worker_settings(
    tls: TlsPaths, rest_port: int, username: str, password: str
) -> dict[str, str]:
    """A worker's settings over SASL_SSL, serving HTTPS that demands a client certificate.

    The worker's settings do not reach its connectors' clients: they get them again under
    `producer.`, `consumer.` and `admin.`.
    """
    client = sasl_client_settings(tls, username, password)
    prefixed = {
        f"{prefix}{key}": value
        for prefix in ("", "producer.", "consumer.", "admin.")
        for key, value in client.items()
    }
    https = "listeners.https."
    return {
        **prefixed,
        "listeners": f"https://127.0.0.1:{rest_port}",
        "rest.advertised.listener": "https",
        f"{https}ssl.client.auth": "required",
        f"{https}ssl.keystore.type": "PKCS12",
        f"{https}ssl.keystore.location": str(tls.rest_keystore),
        f"{https}ssl.keystore.password": tls.store_password,
        f"{https}ssl.key.password": tls.store_password,
        f"{https}ssl.truststore.type": "PKCS12",
        f"{https}ssl.truststore.location": str(tls.rest_truststore),
        f"{https}ssl.truststore.password": tls.store_password,
    }
