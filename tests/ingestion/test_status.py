"""A source's status and counters, derived from its documents by `status.source_refresh_status`, which
every crawled page and index job calls: right in each state, in four statements however many pages."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ingestion.status import source_refresh_status
from sources.models import Document, Source, Status
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


def _site(workspace, agent, statuses: list[str], kind: str = "sitemap") -> Source:
    with workspace_scope(workspace.id):
        source = Source.objects.create(agent=agent, kind=kind, title="docs", status=Status.CRAWLING)
        Document.objects.bulk_create(
            Document(
                workspace_id=workspace.id,
                source=source,
                url=f"https://docs.example.com/{n}",
                status=status,
                error="The page returned 404." if status == Status.FAILED else "",
                error_detail="GET /gone: 404" if status == Status.FAILED else "",
                failure_class="not_found" if status == Status.FAILED else "",
                skip_reason="too_short" if status == Status.SKIPPED else "",
            )
            for n, status in enumerate(statuses)
        )
    return source


def _refreshed(workspace, source: Source) -> Source:
    with workspace_scope(workspace.id):
        source_refresh_status(source_id=source.id)
    return Source.unscoped.get(id=source.id)


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([Status.PENDING, Status.DONE, Status.INDEXING], Status.CRAWLING),  # a page is still to fetch
        ([Status.INDEXING, Status.DONE, Status.FAILED], Status.INDEXING),  # every page fetched
        ([Status.DONE, Status.DONE, Status.FAILED], Status.DONE),
        ([Status.FAILED, Status.FAILED], Status.FAILED),  # nothing indexed: the pages say why
    ],
    ids=["crawling", "indexing", "done", "failed"],
)
def test_the_status_and_counters_follow_the_documents(workspace, agent, statuses, expected):
    source = _refreshed(workspace, _site(workspace, agent, statuses))
    assert source.status == expected
    assert (source.pages_total, source.pages_done, source.pages_failed) == (
        len(statuses),
        statuses.count(Status.DONE),
        statuses.count(Status.FAILED),
    )
    if expected == Status.FAILED:
        assert source.error == "Every page failed: 2 not found." and source.error_detail == "GET /gone: 404"
    if expected == Status.DONE:
        assert source.indexed_at is not None and source.error == ""


@pytest.mark.parametrize(
    ("statuses", "expected", "error"),
    [
        ([Status.DONE, Status.SKIPPED, Status.SKIPPED, Status.FAILED], Status.DONE, ""),
        ([Status.SKIPPED, Status.SKIPPED], Status.DONE, ""),  # nothing failed: pages left out on purpose
        (
            [Status.SKIPPED, Status.FAILED, Status.FAILED],
            Status.FAILED,
            "Nothing could be indexed: 2 not found; 1 page was skipped.",  # not "every page failed"
        ),
    ],
    ids=["some-skipped", "all-skipped", "skipped-and-failed"],
)
def test_skipped_pages_are_counted_apart_from_failures(workspace, agent, statuses, expected, error):
    source = _refreshed(workspace, _site(workspace, agent, statuses))
    assert (source.status, source.error) == (expected, error)
    assert (source.pages_done, source.pages_skipped, source.pages_failed, source.pages_left) == (
        statuses.count(Status.DONE),
        statuses.count(Status.SKIPPED),
        statuses.count(Status.FAILED),
        0,
    )
    assert source.pages_skipped_by_reason == {"too_short": statuses.count(Status.SKIPPED)}


def test_a_source_without_pages_to_fetch_is_indexing_not_crawling(workspace, agent):
    # Pasted text has no pages to fetch: a pending document is waiting for its index job.
    source = _refreshed(workspace, _site(workspace, agent, [Status.PENDING], kind="text"))
    assert source.status == Status.INDEXING


def test_a_refresh_in_flight_takes_four_statements_however_many_pages(workspace, agent):
    # Every crawled page refreshes its source: an aggregate of the documents, the source's row, its
    # chunks' count and the update (it took eight statements before).
    for pages in (3, 300):
        source = _site(workspace, agent, [Status.PENDING] * (pages - 1) + [Status.DONE])
        with workspace_scope(workspace.id), CaptureQueriesContext(connection) as queries:
            source_refresh_status(source_id=source.id)
        assert len(queries) == 4, [q["sql"] for q in queries]
        assert Source.unscoped.get(id=source.id).pages_total == pages


def test_an_other_workspaces_source_is_left_alone(workspace, agent, other_workspace):
    source = _site(workspace, agent, [Status.DONE])
    with workspace_scope(other_workspace.id):
        source_refresh_status(source_id=source.id)
    assert Source.unscoped.get(id=source.id).status == Status.CRAWLING  # not refreshed from outside
