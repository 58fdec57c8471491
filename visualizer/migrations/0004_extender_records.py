# Scheduler extenders (issue 26): a session keeps every extender reply, so a replay of its past
# never calls an extender again.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('visualizer', '0003_change_start'),
    ]

    operations = [
        migrations.AddField(
            model_name='session',
            name='extender_records',
            field=models.JSONField(blank=True, default=list),
        ),
    ]
