"""LoginFailureCount becomes WindowedCounter: it counts refused uploads as well as failed logins."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0011_community")]

    operations = [migrations.RenameModel(old_name="LoginFailureCount", new_name="WindowedCounter")]
