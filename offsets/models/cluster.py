from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from offsets.domain.connectors import MASK, is_secret_name
from offsets.domain.workers import parse_connect_urls
from offsets.kafka import secret_files

# librdkafka settings whose values are secrets: never rendered back to a page or the API.
SECRET_CLIENT_SETTINGS = (
    "sasl.password",
    "sasl.oauthbearer.client.secret",
    # "clientId=... clientSecret=..." (librdkafka's unsecured/legacy OAUTHBEARER settings)
    "sasl.oauthbearer.config",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.key.pem",
)

SECRET_MASK = MASK


def is_secret_client_setting(key: str) -> bool:
    # Beyond librdkafka's own names, the connector rule catches what people paste from Java
    # clients (sasl.jaas.config with its password, ssl.keystore.key, *.token ...).
    return key in SECRET_CLIENT_SETTINGS or is_secret_name(key)


# Settings a cluster may not override: the adapters set them per use (a reader must not
# join a group, a writer must choose its own transactional id).
RESERVED_CLIENT_SETTINGS = ("bootstrap.servers", "group.id", "transactional.id")

topic_name_validator = RegexValidator(
    r"^[A-Za-z0-9._-]{1,249}$", "A Kafka topic name: letters, digits, '.', '_' or '-'."
)
cluster_name_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$",
    "Letters, digits, '.', '_' or '-', starting with a letter or digit (it appears in URLs).",
)
bootstrap_validator = RegexValidator(
    r"^[^\s,:]+:\d{1,5}(,[^\s,:]+:\d{1,5})*$",
    "Comma-separated HOST:PORT pairs, e.g. kafka-1:9092,kafka-2:9092.",
)


def connect_url_validator(value: str) -> None:
    # Not URLValidator: it rejects single-label hosts such as http://connect:8083 (a Kubernetes
    # service name), which is how Connect is usually reached from inside a cluster.
    try:
        parse_connect_urls(value)
    except ValueError as exc:
        raise ValidationError(
            f"{exc} Several workers are comma-separated, e.g. http://w1:8083,http://w2:8083."
        ) from exc


def validate_client_config(value: object) -> None:
    if not isinstance(value, dict):
        raise ValidationError("Client settings must be a JSON object of librdkafka settings.")
    for key, setting in value.items():
        if not isinstance(key, str) or not key:
            raise ValidationError("Every client setting needs a name.")
        if key in RESERVED_CLIENT_SETTINGS:
            raise ValidationError(f"{key!r} is set by the dashboard itself; remove it.")
        if not isinstance(setting, (str, int, float, bool)):
            raise ValidationError(f"{key!r} must be a string, number or boolean.")


def offsets_file_validator(value: str) -> None:
    # Read where the dashboard runs, whatever its working directory: an absolute path only.
    if not value.startswith("/") or "\x00" in value:
        raise ValidationError("An absolute path, e.g. /var/lib/connect/connect.offsets.")


class Cluster(models.Model):
    """A Kafka Connect cluster: the Kafka cluster it stores its state in, and its topics.

    A standalone worker is a cluster too: its source offsets live in a file (read where the
    dashboard runs), its connectors come from its REST API when it answers, and the Kafka
    cluster, optional for it, is where its sinks' groups and data topics live.
    """

    class Kind(models.TextChoices):
        DISTRIBUTED = "distributed"
        STANDALONE = "standalone"

    name = models.CharField(max_length=63, unique=True, validators=[cluster_name_validator])
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.DISTRIBUTED)
    bootstrap_servers = models.CharField(
        max_length=1000,
        blank=True,
        validators=[bootstrap_validator],
        help_text="Required but for a standalone worker, where it is its sinks' Kafka cluster.",
    )
    offsets_file = models.CharField(
        max_length=1000,
        blank=True,
        validators=[offsets_file_validator],
        help_text="A standalone worker's offset.storage.file.filename, as the dashboard reads "
        "it (a shared volume or a copy).",
    )
    client_config = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_client_config],
        help_text=(
            "Extra librdkafka settings, e.g. "
            '{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", '
            '"sasl.username": "dash", "sasl.password": "..."}'
        ),
    )
    offsets_topic = models.CharField(
        max_length=249, default="connect-offsets", validators=[topic_name_validator]
    )
    configs_topic = models.CharField(
        max_length=249, default="connect-configs", validators=[topic_name_validator]
    )
    status_topic = models.CharField(
        max_length=249, default="connect-status", validators=[topic_name_validator]
    )
    connect_url = models.CharField(
        max_length=1000,
        blank=True,
        validators=[connect_url_validator],
        help_text="Optional Kafka Connect REST URL(s), comma-separated, tried in order, e.g. "
        "http://connect-1:8083,http://connect-2:8083",
    )
    # Connect REST basic auth and TLS. The password is a secret like the client settings':
    # stored as typed, never rendered (the admin shows the mask; sending it back keeps it).
    connect_username = models.CharField(max_length=200, blank=True)
    connect_password = models.CharField(max_length=500, blank=True)
    connect_ca_file = models.CharField(
        max_length=500, blank=True, help_text="CA bundle (PEM) to verify the workers' HTTPS"
    )
    connect_cert_file = models.CharField(
        max_length=500, blank=True, help_text="Client certificate (PEM) for mutual TLS"
    )
    connect_key_file = models.CharField(
        max_length=500, blank=True, help_text="The client certificate's private key (PEM)"
    )
    # The workers' offset.flush.interval.ms (a worker setting, not in any topic): a source
    # partition with no commit for STALL_AFTER_FLUSH_INTERVALS of these is reported stalled.
    offset_flush_interval_ms = models.PositiveIntegerField(default=60_000)
    # How often `manage.py scheduler` refreshes the cluster, from one round's start to the
    # next; 0 leaves it to refreshes started by hand.
    refresh_every_seconds = models.PositiveIntegerField(
        default=60,
        help_text="Seconds between the scheduler's refreshes of this cluster (0: never; "
        "refresh by hand or with refresh_offsets).",
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    # A new value at every save of a refresh's results (offsets.refresh.store.save): a live
    # loop starts its next round from what it saved while this is still the value it wrote
    # (offsets.refresh.memory), and reads the stored results back once another save came.
    results_token = models.CharField(max_length=32, blank=True, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.is_standalone:
            if not self.offsets_file:
                raise ValidationError(
                    {"offsets_file": "A standalone worker needs its offsets file."}
                )
        else:
            if self.offsets_file:
                raise ValidationError({"offsets_file": "Only a standalone worker has one."})
            if not self.bootstrap_servers:
                raise ValidationError({"bootstrap_servers": "This field cannot be blank."})

    @property
    def is_standalone(self) -> bool:
        return self.kind == self.Kind.STANDALONE

    @property
    def has_kafka(self) -> bool:
        """Whether a Kafka cluster is configured (always, but for a standalone worker)."""
        return bool(self.bootstrap_servers)

    def lock(self) -> None:
        """Hold this cluster's row lock (PostgreSQL) or the database write lock (SQLite) until
        the current transaction ends.

        Serialises what must not interleave per cluster: claiming a refresh, and a refresh's
        check that no other refresh saved since it planned, together with its save.
        """
        if not Cluster.objects.filter(pk=self.pk).update(updated=models.F("updated")):
            raise Cluster.DoesNotExist(f"Cluster {self.name!r} was deleted")

    def kafka_settings(self) -> dict[str, object]:
        """Return the librdkafka settings to reach this cluster (secrets included, those kept
        in files read now: `secret_files`)."""
        return {
            **secret_files.resolved(self.client_config),
            "bootstrap.servers": self.bootstrap_servers,
        }

    @property
    def connect_urls(self) -> tuple[str, ...]:
        """The worker URLs in the order they are tried (none when not configured)."""
        try:
            return parse_connect_urls(self.connect_url)
        except ValueError:
            return ()

    @property
    def masked_connect_password(self) -> str:
        """The mask when a Connect password is stored, else empty: what pages may show."""
        return SECRET_MASK if self.connect_password else ""

    def masked_client_config(self) -> dict[str, object]:
        """Return the extra client settings with secret values replaced, for display."""
        return {
            key: SECRET_MASK if is_secret_client_setting(key) else value
            for key, value in self.client_config.items()
        }


class MirrorUpstream(models.Model):
    """The registered cluster a MirrorMaker 2 source alias of a Connect cluster stands for.

    A MirrorSourceConnector's offsets name the upstream cluster by its alias
    (`source.cluster.alias`) only; its lag is measured against this cluster's partitions.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="mirror_upstreams")
    source_alias = models.CharField(
        max_length=255, help_text="The connectors' source.cluster.alias, e.g. us-east"
    )
    upstream = models.ForeignKey(
        Cluster,
        on_delete=models.CASCADE,
        related_name="mirrored_by",
        help_text="The registered cluster the alias names (it may be the same cluster).",
    )

    class Meta:
        ordering = ["cluster__name", "source_alias"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "source_alias"], name="one_upstream_per_alias"
            )
        ]

    def __str__(self) -> str:
        return f"{self.cluster}: {self.source_alias} = {self.upstream}"
