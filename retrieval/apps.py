from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _ensure_vector_index(**_kwargs: object) -> None:
    """The cosine HNSW index ships in a migration; another configured metric gets its index here."""
    from config.backends import vector_stores
    from retrieval.stores.pgvector import PgVectorStore

    store = vector_stores["default"]
    if isinstance(store, PgVectorStore) and store.metric != "cosine":
        store.ensure_index()


class RetrievalConfig(AppConfig):
    name = "retrieval"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_ensure_vector_index, sender=self)
