from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("offsets", "0004_sourceoffset_page_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="refreshrun",
            name="malformed_by_reason",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
