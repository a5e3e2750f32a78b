from django.db import migrations


class Migration(migrations.Migration):
    """Statistics on the agent a chunk belongs to.

    Every widget search filters on metadata -> 'agent_id'. Without statistics PostgreSQL guesses that
    0.5 % of rows pass and plans the filtered vector search as a sequential scan, far slower
    than the index scan it picks with these statistics (docs/BENCHMARKS.md). ANALYZE (autovacuum) fills them.
    """

    dependencies = [("sources", "0003_crawl_state")]

    operations = [
        migrations.RunSQL(
            "CREATE STATISTICS IF NOT EXISTS sources_chunk_agent_id ON ((metadata -> 'agent_id')) FROM sources_chunk",
            "DROP STATISTICS IF EXISTS sources_chunk_agent_id",
        )
    ]
