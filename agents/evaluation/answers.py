"""Measuring the built-in answerer on questions whose answer is a known fact on a known page.

A question set is our own annotation (JSON lines: id, question, page, fact) over a site's HTML pages,
which stay where they are (../shared/data); only page paths are referenced (the named sets: sets.py). Each
fact must be in its page's visible text, or the set is refused as mis-annotated. The pages are extracted and
indexed into a throwaway workspace keyed by the site's files and the indexing settings, so a rerun
reuses the index; a fact our extraction lost is reported, and its question is asked like any other (a miss
for a real loss to fix). Each question is asked through the real chat turn (`run_turn`, no model), once
per answerer, and judged on:
  answer    the answer contains the fact (case- and whitespace-insensitive),
  citation  a cited source is the page that holds the fact,
  retrieval a retrieved passage comes from that page (the same for every answerer).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from django.conf import settings
from django.db import transaction
from lxml import html as lxml_html

from agents.answer import ExtractiveAnswer
from agents.models import Agent, Conversation, Message
from agents.prompts import NumberedPassage
from agents.services import start_conversation
from agents.turn import run_turn
from config.backends import embedders
from ingestion.crawl import extract as extract_module
from ingestion.crawl import main_text as main_text_module
from ingestion.crawl.extract import DroppedPage, extract_page
from ingestion.indexing import document_index
from ingestion.kinds.text import TextKind
from ingestion.status import source_refresh_status
from ingestion.text import chunking as chunking_module
from retrieval import evaluation
from sources.models import Chunk, Document, Source, Status, Workspace
from sources.tenancy import workspace_scope

Answerer = Callable[[str, list[NumberedPassage]], ExtractiveAnswer]
SOURCE_TITLE = "answer-evaluation pages"


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    page: str
    fact: str


def load_questions(path: Path) -> list[Question]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Question(r["id"], r["question"], r["page"], r["fact"]) for r in rows]


def normalise(text: str) -> str:
    return " ".join(text.lower().split())


def contains_fact(answer: str, fact: str) -> bool:
    return normalise(fact) in normalise(answer)


def site_pages(site: Path, pattern: str = "*.html") -> list[Path]:
    """The site's HTML pages, without Sphinx's build folders (_static, _sources, _images). `pattern` is
    one glob, then any number of "!glob" that leave pages out ("*.html !all.html")."""
    include, *rest = pattern.split()
    excluded = [glob[1:] for glob in rest if glob.startswith("!")]
    return sorted(
        p
        for p in site.rglob(include)
        if not any(part.startswith("_") for part in p.relative_to(site).parts)
        and not any(p.relative_to(site).match(glob) for glob in excluded)
    )


# Elements that end a line when a browser shows the page, so their texts do not run together.
_BLOCKS = frozenset(
    "address article aside blockquote br dd div dl dt figcaption footer h1 h2 h3 h4 h5 h6 header "
    "hr li main nav ol p pre section table td th tr ul".split()
)


def page_text(path: Path) -> str:
    """All the visible text of an HTML page as written, before our extraction chooses its main text."""
    tree = lxml_html.fromstring(path.read_bytes())
    for hidden in tree.xpath("//script | //style | //noscript | //template"):
        hidden.drop_tree()
    for element in tree.iter():
        if element.tag in _BLOCKS:
            element.tail = "\n" + (element.tail or "")
    return tree.text_content()


def index_site(site: Path, log: Callable[[str], None], pattern: str = "*.html") -> Workspace:
    """Extract and index every page of `site` into a workspace of its own; reused when already done."""
    pages = site_pages(site, pattern)
    key = evaluation.fingerprint(
        [evaluation.file_fingerprint(p) for p in pages],
        # The extractor and the chunker decide what is indexed: an earlier version's index is not reused.
        [
            hashlib.sha256(Path(cast(str, m.__file__)).read_bytes()).hexdigest()  # modules of files
            for m in (extract_module, main_text_module, chunking_module)
        ],
        settings.CHUNK_TARGET_CHARS,
        settings.CHUNK_OVERLAP_CHARS,
        settings.EMBED_TITLE_PREFIX,
        settings.SENTENCE_VECTORS,
        embedders["default"].model_name,
    )
    workspace, _ = Workspace.objects.get_or_create(
        slug=f"answers-{key}", defaults={"name": f"Answer evaluation {site.name}"}
    )
    with workspace_scope(workspace.id):
        agent = Agent.objects.first() or Agent.objects.create(name="answer evaluation")
        source = Source.objects.filter(title=SOURCE_TITLE).first()
        if source is not None and source.status == Status.DONE:
            log(f"reusing the index in workspace {workspace.slug}")
            return workspace
        if source is None:
            with transaction.atomic():
                source = Source.objects.create(
                    agent=agent, kind=TextKind.name, title=SOURCE_TITLE, status=Status.INDEXING
                )
                for path in pages:
                    relative = path.relative_to(site).as_posix()
                    try:
                        page = extract_page(path.read_bytes(), f"https://docs.example/{relative}")
                    except DroppedPage as exc:
                        log(f"skipped {relative}: {exc.reason}")
                        continue
                    Document.objects.create(
                        workspace=workspace,
                        source=source,
                        url=relative,
                        title=page.title,
                        text=page.text,
                        language=page.language or "",
                    )
        pending = list(source.documents.exclude(status=Status.DONE).order_by("id"))  # type: ignore[misc]  # django-stubs cannot type a reverse manager of a from_queryset manager
        for number, document in enumerate(pending, 1):
            document_index(document=document)
            if number % 20 == 0:
                log(f"indexed {number}/{len(pending)} pages")
        source_refresh_status(source_id=source.id)
    return workspace


@dataclass(frozen=True)
class Outcome:
    answer: str
    answered: bool  # the answer contains the fact
    cited: bool  # a cited source is the fact's page
    retrieved: bool  # a retrieved passage is from the fact's page
    fact_retrieved: bool  # a passage given to the answerer contains the fact: the most it can do
    grounded: bool
    sources: int


def ask(workspace: Workspace, question: Question, answerer: Answerer) -> Outcome:
    """One question through the real chat turn, in a conversation of its own."""
    with workspace_scope(workspace.id):
        agent = Agent.objects.get()
        conversation = start_conversation(agent=agent)
        done = next(
            e
            for e in run_turn(
                agent=agent,
                conversation=conversation,
                user_text=question.question,
                audiences=[],
                answerer=answerer,
            )
            if e["type"] in ("done", "error")
        )
        if done["type"] == "error":
            raise RuntimeError(f"{question.id}: {done['message']}")
        pages, texts = _retrieved(conversation)
        cited_pages = {pages[s["number"] - 1] for s in done["sources"] if s["number"] <= len(pages)}
        return Outcome(
            answer=done["answer"],
            answered=contains_fact(done["answer"], question.fact),
            cited=question.page in cited_pages,
            retrieved=question.page in pages,
            fact_retrieved=any(contains_fact(text, question.fact) for text in _given(texts, agent)),
            grounded=bool(done["metadata"].get("grounded")),
            sources=len(done["sources"]),
        )


def _given(texts: list[str], agent: Agent) -> list[str]:
    """The passages the answerer was given: as many as fit the agent's context budget (see prompts)."""
    given: list[str] = []
    used = 0
    for text in texts:
        if given and used + len(text) > agent.context_budget:
            break
        given.append(text)
        used += len(text)
    return given


def _retrieved(conversation: Conversation) -> tuple[list[str], list[str]]:
    """The page and text of each passage the turn's search returned, in rank order (= citation numbers)."""
    tool = Message.objects.filter(conversation=conversation, role=Message.Role.TOOL).get()
    chunk_ids = [r["chunk_id"] for r in tool.tool_result]
    rows = Chunk.objects.filter(id__in=chunk_ids).values_list("id", "document__url", "text")
    by_chunk = {str(cid): (url, text) for cid, url, text in rows}
    found = [by_chunk.get(cid, ("", "")) for cid in chunk_ids]
    return [url for url, _ in found], [text for _, text in found]


def summarise(outcomes: list[Outcome]) -> dict[str, float | int]:
    n = max(len(outcomes), 1)
    return {
        "answer_accuracy": round(sum(o.answered for o in outcomes) / n, 3),
        "citation_accuracy": round(sum(o.cited for o in outcomes) / n, 3),
        "grounded_rate": round(sum(o.grounded for o in outcomes) / n, 3),
        "mean_answer_chars": round(sum(len(o.answer) for o in outcomes) / n),
        "n": len(outcomes),
    }


def annotation_problems(site: Path, questions: list[Question], pattern: str = "*.html") -> list[str]:
    """Questions whose page is not one of the site's pages, or whose fact is not in the page's visible text:
    an annotation error, which no answerer can be measured on."""
    pages = {p.relative_to(site).as_posix(): p for p in site_pages(site, pattern)}
    texts: dict[str, str] = {}
    problems = []
    for q in questions:
        if q.page not in pages:
            problems.append(f"{q.id}: page {q.page} is not a page of {site}")
            continue
        if q.page not in texts:
            texts[q.page] = page_text(pages[q.page])
        if not contains_fact(texts[q.page], q.fact):
            problems.append(f"{q.id}: page {q.page} does not contain {q.fact!r}")
    return problems


def extraction_losses(workspace: Workspace, questions: list[Question]) -> dict[str, str]:
    """Question id -> what our extraction lost of a correctly annotated question: its page dropped, or its
    fact left out of the page's indexed text. Such a question stays in the set and is asked like any other:
    a miss, unless another page happens to state the same fact."""
    with workspace_scope(workspace.id):
        texts = dict(Document.objects.values_list("url", "text"))
    losses = {}
    for q in questions:
        if q.page not in texts:
            losses[q.id] = f"page {q.page} was dropped by extraction"
        elif not contains_fact(texts[q.page], q.fact):
            losses[q.id] = f"fact not in the indexed text of its page ({q.page}: {q.fact!r})"
    return losses
