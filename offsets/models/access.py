"""Who may see and do what, where: grants of a role to a group, and the identity provider's
groups mapped to the dashboard's groups (offsets.rights reads both)."""

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models

from offsets.models.cluster import Cluster


class Role(models.TextChoices):
    VIEWER = "viewer", "viewer"
    EDITOR = "editor", "editor (stages edits, stops and resumes connectors)"
    APPROVER = "approver", "approver (approves and applies others' edits)"
    REFRESH = "refresh", "refresh operator (starts refreshes)"
    RECORDS = "records", "record viewer (sees the records a sink reads next)"
    ADMIN = "admin", "admin (all of the above)"


class Grant(models.Model):
    """A role for the members of a group, on one cluster or every cluster, and on the
    connectors whose names match a glob."""

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="grants")
    role = models.CharField(max_length=16, choices=Role.choices)
    cluster = models.ForeignKey(
        Cluster,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="grants",
        help_text="Empty: every cluster, those added later included.",
    )
    connectors = models.CharField(
        max_length=255,
        default="*",
        help_text="The connectors the role covers, as a glob: * for all, payments-* for some.",
    )

    class Meta:
        # Two constraints, as NULLs are distinct in a unique index (every cluster is NULL).
        constraints = [
            models.UniqueConstraint(
                fields=["group", "role", "cluster", "connectors"],
                condition=models.Q(cluster__isnull=False),
                name="one_grant_per_group_role_cluster",
            ),
            models.UniqueConstraint(
                fields=["group", "role", "connectors"],
                condition=models.Q(cluster__isnull=True),
                name="one_grant_per_group_role_everywhere",
            ),
        ]

    def __str__(self) -> str:
        where = self.cluster.name if self.cluster_id else "every cluster"
        return f"{self.group.name}: {self.role} on {where}, connectors {self.connectors}"


class ProviderGroup(models.Model):
    """A value of the identity provider's groups claim, and the dashboard group it puts its
    members in at every login (and takes them out of when the provider no longer says so)."""

    claim_value = models.CharField(max_length=255, unique=True)
    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="provider_groups")

    def __str__(self) -> str:
        return f"{self.claim_value} → {self.group.name}"


class ProviderIdentity(models.Model):
    """The identity provider's subject of a user who logs in through single sign-on.

    The subject, not the user name, is who the person is: a rename at the provider keeps the
    same user, and a provider account whose preferred name matches a local user never takes
    that user over."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="provider_identity"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="one_user_per_subject")
        ]
        verbose_name_plural = "provider identities"

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"
