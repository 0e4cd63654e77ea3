"""An index that finds a cluster's latest lag samplings and its oldest samples.

Every refresh samples every sink partition at one time (`sampled_at`). The refresh reads the
last few samplings for Burrow's window, and drops samples past the retention
(LAG_SAMPLE_RETENTION_DAYS): both by time over the whole cluster, which the (cluster,
connector, sampled_at) index does not serve.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('offsets', '0008_sourceoffset_key_index'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='lagsample',
            index=models.Index(fields=['cluster', 'sampled_at'], name='offsets_lagsample_time'),
        ),
    ]
