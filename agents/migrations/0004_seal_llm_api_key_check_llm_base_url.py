"""Model API keys sealed at rest (config/secrets.py), and the model URL held to the outbound address policy.

Existing keys are encrypted in raw SQL: the field itself would try to decrypt the plain values it reads.
"""

import config.outbound
import config.secrets
from django.db import migrations, models


def _transform(schema_editor, change):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, llm_api_key FROM agents_agent WHERE llm_api_key <> ''")
        for agent_id, value in cursor.fetchall():
            cursor.execute(
                "UPDATE agents_agent SET llm_api_key = %s WHERE id = %s", [change(value), agent_id]
            )


def seal_existing_keys(apps, schema_editor):
    _transform(schema_editor, config.secrets.seal)


def unseal_existing_keys(apps, schema_editor):
    _transform(schema_editor, lambda token: config.secrets.unseal(token, where="agents_agent.llm_api_key"))


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0003_agent_auto_sources_agent_context_budget_and_more'),
    ]

    operations = [
        migrations.AlterField(
            model_name='agent',
            name='llm_api_key',
            field=config.secrets.EncryptedTextField(blank=True, verbose_name='model API key'),
        ),
        migrations.RunPython(seal_existing_keys, unseal_existing_keys),
        migrations.AlterField(
            model_name='agent',
            name='llm_base_url',
            field=models.URLField(blank=True, validators=[config.outbound.validate_outbound_url]),
        ),
    ]
