import django.db.models.deletion
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    """Postings are deleted by chunk within a workspace: index exactly that, and drop the workspace-only
    index that (with statistics stale after a bulk load) made such a delete read a workspace's every
    posting: a large share of a bulk upsert's time at scale (docs/BENCHMARKS.md). Built
    concurrently: the table is the largest.
    """

    atomic = False
    dependencies = [
        ("retrieval", "0001_initial"),
        ("sources", "0006_chunk_metadata_gin"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="keywordposting",
            index=models.Index(fields=["chunk", "workspace"], name="posting_chunk_workspace"),
        ),
        RemoveIndexConcurrently(model_name="keywordposting", name="posting_chunk"),
        migrations.AlterField(
            model_name="keywordposting",
            name="workspace",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="sources.workspace",
            ),
        ),
    ]
