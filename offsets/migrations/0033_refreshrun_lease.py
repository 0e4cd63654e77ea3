from datetime import timedelta

from django.db import migrations, models
from django.db.models.functions import Coalesce

# What a run in flight was judged by before leases: its last sign of life, 300 s on
# (REFRESH_ABANDONED_SECONDS' default). It keeps that much time to end or be restarted.
ABANDONED_SECONDS = 300


def lease_running_runs(apps, schema_editor):
    RefreshRun = apps.get_model("offsets", "RefreshRun")
    RefreshRun.objects.filter(status="running").update(
        lease_expires_at=models.ExpressionWrapper(
            Coalesce("heartbeat_at", "started_at") + timedelta(seconds=ABANDONED_SECONDS),
            output_field=models.DateTimeField(),
        )
    )


class Migration(migrations.Migration):
    dependencies = [
        ("offsets", "0032_cluster_results_token"),
    ]

    operations = [
        migrations.AddField(
            model_name="refreshrun",
            name="lease_expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(lease_running_runs, migrations.RunPython.noop, elidable=True),
    ]
