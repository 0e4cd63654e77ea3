"""An index that finds one partition of a source connector by its key hash.

The progress chart and the API's partition history read `WHERE cluster, connector, key_hash`;
the unique key (cluster, topic, key_hash) does not serve it without the topic, so the lookup
walked the (cluster, connector, effective) index and every row behind it: ~15 ms for a
connector of 10,000 partitions on SQLite, well under a millisecond with this index.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('offsets', '0007_sink_keep'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='sourceoffset',
            index=models.Index(fields=['cluster', 'connector', 'key_hash'], name='offsets_sourceoffset_key'),
        ),
    ]
