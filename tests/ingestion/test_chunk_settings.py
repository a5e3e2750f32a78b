"""A source's own chunking: size, overlap and a record separator, accepted by every kind's config (the shared
base), refused when out of bounds, and used when its documents are cut into passages."""

from __future__ import annotations

import pytest

from ingestion.indexing import source_index
from ingestion.kinds.config import KindError
from ingestion.kinds.registry import validate_config
from ingestion.lifecycle import source_create
from sources.models import Chunk, Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db

RECORDS = [
    f"Q: Question number {n}?\nA: The answer to question {n} is {'long ' * 20}enough." for n in range(12)
]


def add_text(workspace, agent, content: str, **chunking) -> list[str]:
    with workspace_scope(workspace.id):
        source = source_create(
            workspace=workspace,
            agent_id=agent.id,
            kind="text",
            title="FAQ",
            payload={"content": content, **chunking},
        )
        source_index(source=source)
        assert Source.objects.get(id=source.id).config == {
            k: v.replace("\\n", "\n") if isinstance(v, str) else v for k, v in chunking.items()
        }
        return list(Chunk.objects.filter(source=source).order_by("position").values_list("text", flat=True))


def test_every_kind_validates_the_shared_chunking_fields():
    for kind, payload in (("text", {"content": "x"}), ("url", {"url": "http://127.0.0.1/faq"})):
        config = validate_config(kind, {**payload, "chunk_size": 800, "record_separator": "\\n---\\n"})
        assert config.chunking() == {"chunk_size": 800, "record_separator": "\n---\n"}
    with pytest.raises(KindError) as raised:
        validate_config("sitemap", {"url": "http://127.0.0.1/sitemap.xml", "chunk_size": 50})
    assert "chunk_size" in raised.value.errors
    with pytest.raises(KindError) as raised:
        validate_config("text", {"content": "x", "chunk_size": 400, "chunk_overlap": 200})
    assert "at most a quarter" in str(raised.value.errors)
    with pytest.raises(KindError) as raised:
        validate_config("text", {"content": "x", "record_separator": "-" * 30})
    assert "record_separator" in raised.value.errors


def test_records_are_packed_whole_and_empty_ones_dropped(workspace, agent):
    content = "\n---\n".join([*RECORDS[:3], " ", *RECORDS[3:]])  # with an empty record
    default = add_text(workspace, agent, content)
    packed = add_text(workspace, agent, content, chunk_size=600, record_separator="\\n---\\n")
    # Each chunk is whole records joined by a paragraph break (not the separator, which visitors would see:
    # issue #56), as many as fit in 600 characters.
    rebuilt = [record for chunk in packed for record in chunk.split("\n\n")]
    assert rebuilt == RECORDS
    assert all(len(chunk) <= 600 for chunk in packed) and len(packed) > 1
    # As many as fit: the next chunk's first record would not have fitted in the one before.
    firsts = [chunk.split("\n\n")[0] for chunk in packed[1:]]
    assert all(len(c) + 2 + len(r) > 600 for c, r in zip(packed, firsts, strict=False))
    assert packed != default  # the deployment's chunking (2000 characters) cuts elsewhere


def test_chunk_size_and_overlap_change_the_passages(workspace, agent):
    text = "\n\n".join(f"Paragraph {n}. " + "Words about kettles and tea. " * 8 for n in range(30))
    large = add_text(workspace, agent, text)
    small = add_text(workspace, agent, text, chunk_size=500, chunk_overlap=0)
    overlapping = add_text(workspace, agent, text, chunk_size=500, chunk_overlap=100)
    assert len(small) > len(large) and all(len(c) <= 500 for c in small)
    assert overlapping != small and all(len(c) <= 600 for c in overlapping)
    # With overlap, each chunk starts with the end of the one before.
    assert any(overlapping[i][:40] in overlapping[i - 1] for i in range(1, len(overlapping)))
    assert not any(small[i][:40] in small[i - 1] for i in range(1, len(small)))
