from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations


class Migration(migrations.Migration):
    """Metadata filters become containment queries served by a GIN index.

    The widget's agent filter passes few chunks when an agent is small beside others in a big
    workspace; HNSW then walks most of the graph to find them (or stops at hnsw.max_scan_tuples with
    too few). With the index, PostgreSQL reads those chunks directly and sorts them exactly. The
    expression statistics of 0004 served the previous form of the filter and are dropped. Built
    concurrently: chunk tables can be large.
    """

    atomic = False
    dependencies = [("sources", "0005_chunk_model_index")]

    operations = [
        AddIndexConcurrently(
            model_name="chunk",
            index=GinIndex(fields=["metadata"], opclasses=["jsonb_path_ops"], name="chunk_metadata_gin"),
        ),
        migrations.RunSQL(
            "DROP STATISTICS IF EXISTS sources_chunk_agent_id",
            "CREATE STATISTICS IF NOT EXISTS sources_chunk_agent_id ON ((metadata -> 'agent_id')) FROM sources_chunk",
        ),
    ]
