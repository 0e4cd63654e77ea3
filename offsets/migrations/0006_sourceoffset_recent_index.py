"""An index that gives a source connector's partitions newest commit first.

The partitions table sorted by last commit (newest first) reads `WHERE cluster, connector,
effective ORDER BY last_commit_at DESC NULLS LAST, identity, id LIMIT 50 OFFSET n`. Without
an index the database sorts every partition of the connector on each page (10,000
partitions: ~16 ms on SQLite). SQLite keeps NULLs smallest, so a DESC column already puts
them last and the index below gives the whole order (EXPLAIN QUERY PLAN: no temp B-tree).
PostgreSQL sorts NULLs largest, so its index says NULLS LAST; it leaves `identity` out for
the reason of migration 0004 (a long partition map would exceed a B-tree entry and make the
refresh's INSERT fail) and finishes ties with an incremental sort.
"""

from django.db import migrations

INDEX = "offsets_sourceoffset_recent"


def create(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{INDEX}" ON "offsets_sourceoffset" '
            '("cluster_id", "connector", "effective", "last_commit_at" DESC, "identity", "id")'
        )
    elif vendor == "postgresql":
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{INDEX}" ON "offsets_sourceoffset" '
            '("cluster_id", "connector", "effective", "last_commit_at" DESC NULLS LAST)'
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor in ("sqlite", "postgresql"):
        schema_editor.execute(f'DROP INDEX IF EXISTS "{INDEX}"')


class Migration(migrations.Migration):
    dependencies = [("offsets", "0005_refreshrun_malformed_by_reason")]

    operations = [migrations.RunPython(create, drop)]
