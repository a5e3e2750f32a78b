"""The plan every workspace without one is on (settings.GROUNDED_DEFAULT_PLAN): created with no limits, so
an upgrade changes nothing until an operator sets them in the Django admin."""

from django.conf import settings
from django.db import migrations


def create_default_plan(apps, schema_editor):
    Plan = apps.get_model("sources", "Plan")
    name = getattr(settings, "GROUNDED_DEFAULT_PLAN", "default")
    Plan.objects.get_or_create(name=name, defaults={"label": "Default"})


class Migration(migrations.Migration):
    dependencies = [("sources", "0012_plans")]

    operations = [migrations.RunPython(create_default_plan, migrations.RunPython.noop)]
