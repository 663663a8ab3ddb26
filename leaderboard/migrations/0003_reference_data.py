"""Reference data: the KernelBench benchmark with its three levels, and the metric catalogue."""

from django.db import migrations

from leaderboard.reference_data import ensure_reference_data


def load(apps, schema_editor):
    ensure_reference_data(apps)


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0002_initial")]
    operations = [migrations.RunPython(load, migrations.RunPython.noop)]
