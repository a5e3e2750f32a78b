"""Every committed change to an API key (other than its last use) or to a workspace sends
NOTIFY grounded_api_keys, so the web processes forget the key rows they keep (sources/key_rows.py).
Triggers, not application code: a queryset update(), the admin and plain SQL all notify alike."""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION grounded_api_keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('grounded_api_keys', TG_TABLE_NAME);
    RETURN NULL;
END $$;

-- last_used_at is written by authentication itself, at most once a minute a key: not a change to forget.
CREATE TRIGGER sources_apikey_changed AFTER UPDATE ON sources_apikey FOR EACH ROW
    WHEN ((to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at'))
    EXECUTE FUNCTION grounded_api_keys_changed();
CREATE TRIGGER sources_apikey_removed AFTER DELETE OR TRUNCATE ON sources_apikey FOR EACH STATEMENT
    EXECUTE FUNCTION grounded_api_keys_changed();
CREATE TRIGGER sources_workspace_changed AFTER UPDATE OR DELETE OR TRUNCATE ON sources_workspace
    FOR EACH STATEMENT EXECUTE FUNCTION grounded_api_keys_changed();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS sources_workspace_changed ON sources_workspace;
DROP TRIGGER IF EXISTS sources_apikey_removed ON sources_apikey;
DROP TRIGGER IF EXISTS sources_apikey_changed ON sources_apikey;
DROP FUNCTION IF EXISTS grounded_api_keys_changed();
"""


class Migration(migrations.Migration):
    dependencies = [("sources", "0016_chunk_input_digest")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
