"""Pages deliberately left out (too little text, only links, a site's search page) are `skipped`, with their
reason and the size of their text, apart from failures; the admin can index one anyway (Document.keep_short).
Pages that failed as "dropped" for one of those reasons before become skipped, and their sources' counters
follow."""

from django.db import migrations, models
from django.db.models import Count, Q

SKIP_REASONS = ("too_short", "link_list", "search_page")
STATUSES = [
    ("pending", "Pending"),
    ("crawling", "Crawling"),
    ("indexing", "Indexing"),
    ("done", "Done"),
    ("failed", "Failed"),
    ("skipped", "Skipped"),
]


def failed_to_skipped(apps, schema_editor):
    Document = apps.get_model("sources", "Document")
    Source = apps.get_model("sources", "Source")
    affected = set()
    for reason in SKIP_REASONS:
        # ingestion.pages wrote "dropped: <reason>", with the request id on a line of its own after it.
        dropped = Document._base_manager.filter(status="failed", failure_class="dropped").filter(
            Q(error_detail=f"dropped: {reason}") | Q(error_detail__startswith=f"dropped: {reason}\n")
        )
        affected |= set(dropped.values_list("source_id", flat=True))
        dropped.update(status="skipped", skip_reason=reason, failure_class="")
    for source_id in affected:
        documents = Document._base_manager.filter(source_id=source_id)
        counts = documents.aggregate(
            done=Count("id", filter=Q(status="done")),
            failed=Count("id", filter=Q(status="failed")),
            skipped=Count("id", filter=Q(status="skipped")),
        )
        by_reason = dict(
            documents.filter(status="skipped")
            .values_list("skip_reason")
            .annotate(n=Count("id"))
            .values_list("skip_reason", "n")
        )
        update = {
            "pages_done": counts["done"],
            "pages_failed": counts["failed"],
            "pages_skipped": counts["skipped"],
            "pages_skipped_by_reason": by_reason,
        }
        # A source that failed only because every page was "dropped" has nothing that failed any more.
        source = Source._base_manager.filter(id=source_id, status="failed")
        if counts["failed"] == 0:
            source.update(status="done", error="", error_detail="")
        Source._base_manager.filter(id=source_id).update(**update)


def skipped_to_failed(apps, schema_editor):
    Document = apps.get_model("sources", "Document")
    Document._base_manager.filter(status="skipped").update(status="failed", failure_class="dropped")


class Migration(migrations.Migration):
    dependencies = [("sources", "0017_api_key_change_notices")]

    operations = [
        migrations.AddField(
            model_name="document", name="keep_short", field=models.BooleanField(default=False)
        ),
        migrations.AddField(
            model_name="document", name="skip_reason", field=models.CharField(blank=True, max_length=20)
        ),
        migrations.AddField(
            model_name="document", name="skipped_chars", field=models.PositiveIntegerField(default=0)
        ),
        migrations.AddField(
            model_name="source", name="pages_skipped", field=models.PositiveIntegerField(default=0)
        ),
        migrations.AddField(
            model_name="source",
            name="pages_skipped_by_reason",
            field=models.JSONField(blank=True, default=dict),
        ),
        *(
            migrations.AlterField(
                model_name=model,
                name="status",
                field=models.CharField(choices=STATUSES, default="pending", max_length=10),
            )
            for model in ("document", "source")
        ),
        migrations.RunPython(failed_to_skipped, skipped_to_failed),
    ]
