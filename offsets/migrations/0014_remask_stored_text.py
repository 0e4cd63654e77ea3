"""Mask what earlier versions stored with narrower rules: configs, traces, examples, errors.

The refresh masks text from Kafka before storing it; rows written before the masking rules
grew (URL query passwords, Oracle `user/pw@host`, Authorization headers, traces, examples of
malformed records) would show their secrets until the next refresh of their cluster. Masking
is idempotent, so rows already masked stay as they are.
"""

from django.db import migrations

from offsets.domain.masking import mask_secrets, mask_text

BATCH = 500


def _remask(model, fields: dict, masks: dict) -> None:
    changed = []
    for row in model.objects.only("pk", *fields).iterator(chunk_size=BATCH):
        dirty = False
        for field in fields:
            value = getattr(row, field)
            if value:
                masked = masks[field](value)
                if masked != value:
                    setattr(row, field, masked)
                    dirty = True
        if dirty:
            changed.append(row)
        if len(changed) >= BATCH:
            model.objects.bulk_update(changed, fields)
            changed = []
    if changed:
        model.objects.bulk_update(changed, fields)


def _config(value):
    # A config maps names to strings or null; anything else was never a config.
    if isinstance(value, dict) and all(isinstance(v, str | None) for v in value.values()):
        return mask_secrets(value)
    return value


def remask(apps, schema_editor) -> None:
    _remask(
        apps.get_model("offsets", "ConnectorSnapshot"),
        ["config", "trace"],
        {"config": _config, "trace": mask_text},
    )
    _remask(apps.get_model("offsets", "MalformedCount"), ["example"], {"example": mask_text})
    _remask(apps.get_model("offsets", "RefreshRun"), ["error"], {"error": mask_text})


class Migration(migrations.Migration):
    dependencies = [("offsets", "0013_refreshrun_heartbeat")]

    operations = [migrations.RunPython(remask, migrations.RunPython.noop, elidable=True)]
