import json

from django import forms
from django.contrib import admin

from offsets.models import (
    Cluster,
    Grant,
    MirrorUpstream,
    ProviderGroup,
    ProviderIdentity,
    SinkOffsetsStore,
)
from offsets.models.cluster import SECRET_MASK, is_secret_client_setting


class ClusterAdminForm(forms.ModelForm):
    """Shows secret client settings (SASL/SSL passwords) masked; a masked value sent back
    keeps the stored secret, so editing other fields never needs the secret re-typed."""

    class Meta:
        model = Cluster
        fields = [
            "name",
            "kind",
            "bootstrap_servers",
            "offsets_file",
            "client_config",
            "offsets_topic",
            "configs_topic",
            "status_topic",
            "connect_url",
            "connect_username",
            "connect_password",
            "connect_ca_file",
            "connect_cert_file",
            "connect_key_file",
            "offset_flush_interval_ms",
            "refresh_every_seconds",
        ]

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and not self.is_bound:
            self.initial["client_config"] = self.instance.masked_client_config()
            self.initial["connect_password"] = self.instance.masked_connect_password
        self.fields["connect_password"].help_text = (
            "Connect REST basic auth password, shown masked: leave the mask to keep it, "
            "clear the field to remove it."
        )
        # A form without the field (written before standalone workers) means a distributed one.
        self.fields["kind"].required = False

    def clean_kind(self) -> str:
        return self.cleaned_data["kind"] or Cluster.Kind.DISTRIBUTED

    def clean_connect_password(self) -> str:
        password = self.cleaned_data["connect_password"]
        if password == SECRET_MASK and self.instance.pk:
            return self.instance.connect_password
        return password

    def clean_client_config(self) -> dict:
        config = self.cleaned_data["client_config"]
        if isinstance(config, str):  # JSONField form values arrive decoded; be safe anyway
            config = json.loads(config)
        stored = self.instance.client_config if self.instance.pk else {}
        for key, value in list(config.items()):
            if value == SECRET_MASK and is_secret_client_setting(key):
                if key not in stored:
                    raise forms.ValidationError(f"{key!r}: enter the secret value, not the mask.")
                config[key] = stored[key]
        return config


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    form = ClusterAdminForm
    list_display = [
        "name",
        "kind",
        "bootstrap_servers",
        "offsets_file",
        "offsets_topic",
        "configs_topic",
        "status_topic",
    ]
    search_fields = ["name", "bootstrap_servers"]
    readonly_fields = ["created", "updated"]


@admin.register(MirrorUpstream)
class MirrorUpstreamAdmin(admin.ModelAdmin):
    list_display = ["cluster", "source_alias", "upstream"]
    list_filter = ["cluster"]
    search_fields = ["source_alias", "cluster__name", "upstream__name"]


@admin.register(SinkOffsetsStore)
class SinkOffsetsStoreAdmin(admin.ModelAdmin):
    """Where a sink keeps its offsets when not in Connect's group (the connector page links
    here with the suggested values filled in)."""

    list_display = ["cluster", "connector", "kind", "group_cluster", "group_id", "offsets_file"]
    list_filter = ["cluster", "kind"]
    search_fields = ["connector", "cluster__name", "group_id", "offsets_file"]


@admin.register(Grant)
class GrantAdmin(admin.ModelAdmin):
    """Who may do what, where: a role for a group's members on one cluster or every cluster."""

    list_display = ["group", "role", "cluster", "connectors"]
    list_filter = ["role", "cluster", "group"]
    search_fields = ["group__name", "cluster__name", "connectors"]


@admin.register(ProviderGroup)
class ProviderGroupAdmin(admin.ModelAdmin):
    """The identity provider's groups claim values, and the group each puts its members in."""

    list_display = ["claim_value", "group"]
    search_fields = ["claim_value", "group__name"]


@admin.register(ProviderIdentity)
class ProviderIdentityAdmin(admin.ModelAdmin):
    """Who a single sign-on user is at the provider: made at their first login, never edited
    (a changed subject would hand the user to another person)."""

    list_display = ["user", "subject", "issuer"]
    search_fields = ["user__username", "subject"]
    readonly_fields = ["user", "issuer", "subject"]

    def has_add_permission(self, request) -> bool:
        return False
