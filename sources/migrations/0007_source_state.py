"""Source.config keeps what the user set; Source.state what ingestion found out (moved out of config)."""

from django.db import migrations, models

# Keys that were runtime bookkeeping inside config.
STATE_KEYS = ("chars", "size", "storage_path", "sha256", "parsed", "segments", "reupload_needed", "chunk_separator")


def split(apps, schema_editor):
    Source = apps.get_model("sources", "Source")
    for source in Source._base_manager.exclude(config={}).iterator():
        state = {k: source.config[k] for k in STATE_KEYS if k in source.config}
        if state:
            source.config = {k: v for k, v in source.config.items() if k not in STATE_KEYS}
            source.state = {**source.state, **state}
            source.save(update_fields=["config", "state"])


def merge(apps, schema_editor):
    Source = apps.get_model("sources", "Source")
    for source in Source._base_manager.exclude(state={}).iterator():
        source.config = {**source.config, **source.state}
        source.save(update_fields=["config"])


class Migration(migrations.Migration):
    dependencies = [("sources", "0006_chunk_metadata_gin")]

    operations = [
        migrations.AddField(
            model_name="source", name="state", field=models.JSONField(blank=True, default=dict)
        ),
        migrations.RunPython(split, merge),
    ]
