"""Freshness without a crawl: schedules, the beat task's claims, per-workspace limits, pause, the sweeper's
deadlines, what a source that indexed nothing says, and per-host slots with Crawl-delay."""

from __future__ import annotations

import itertools
import threading
import time

import pytest
from django.db import connection
from django.utils import timezone

from ingestion import freshness, lifecycle
from ingestion.crawl import hosts
from ingestion.failures import nothing_indexed
from ingestion.jobs.sweeper import sweep_stalled
from sources.models import Document, Source
from sources.tenancy import workspace_scope


def _web_source(workspace, agent, n: int = 0, **fields) -> Source:
    values = {
        "status": "done",
        "schedule": "daily",
        "next_sync_at": timezone.now() - timezone.timedelta(minutes=1),
        **fields,
    }
    with workspace_scope(workspace.id):
        return Source.objects.create(
            agent=agent, kind="sitemap", title=f"site {n}", config={"url": f"http://site{n}.test/"}, **values
        )


@pytest.mark.django_db
def test_text_has_no_schedule_and_web_kinds_take_the_workspace_default(workspace, agent, settings):
    settings.CRAWL_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    text = lifecycle.source_create(
        workspace=workspace, agent_id=agent.id, kind="text", title="t", payload={"content": "hello"}
    )
    assert text.schedule == "off"
    with pytest.raises(lifecycle.KindError) as refused:
        lifecycle.source_create(
            workspace=workspace,
            agent_id=agent.id,
            kind="text",
            title="t",
            payload={"content": "hello"},
            schedule="daily",
        )
    assert "schedule" in refused.value.errors
    site = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="sitemap",
        title="",
        payload={"url": "http://127.0.0.1:9/"},
    )
    assert site.schedule == "daily"  # the workspace's default
    workspace.default_schedule = "weekly"
    workspace.save()
    weekly = lifecycle.source_create(
        workspace=workspace, agent_id=agent.id, kind="feed", title="", payload={"url": "http://127.0.0.1:9/f"}
    )
    hourly = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="url",
        title="",
        payload={"url": "http://127.0.0.1:9/p"},
        schedule="hourly",
    )
    assert (weekly.schedule, hourly.schedule) == ("weekly", "hourly")


@pytest.mark.django_db
def test_due_sources_are_claimed_within_the_per_workspace_limit(
    workspace, other_workspace, agent, other_agent, settings
):
    settings.SYNC_MAX_PER_WORKSPACE = 2
    ours = [_web_source(workspace, agent, n) for n in range(4)]
    theirs = _web_source(other_workspace, other_agent, 9)
    paused = _web_source(workspace, agent, 5, paused=True)
    off = _web_source(workspace, agent, 6, schedule="off")
    later = _web_source(workspace, agent, 7, next_sync_at=timezone.now() + timezone.timedelta(hours=1))
    claimed = {s.id for s in freshness.claim_due()}
    assert claimed == {ours[0].id, ours[1].id, theirs.id}
    for source in Source.unscoped.filter(id__in=claimed):
        assert source.status == "pending"
        assert source.next_sync_at > timezone.now() + timezone.timedelta(hours=23)  # one interval on
    for untouched in (ours[2], ours[3], paused, off, later):
        assert Source.unscoped.get(id=untouched.id).status == "done"
    # The two claimed syncs of our workspace are still running: nothing more of ours starts.
    assert freshness.claim_due() == []


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_claimers_never_start_the_same_sync(workspace, agent, settings):
    settings.SYNC_MAX_PER_WORKSPACE = 1000
    sources = [_web_source(workspace, agent, n) for n in range(40)]
    results: list[list[int]] = [[], []]
    barrier = threading.Barrier(2)

    def claimer(slot: int) -> None:
        try:
            barrier.wait()
            results[slot] = [s.id for s in freshness.claim_due()]
        finally:
            connection.close()

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claimed = results[0] + results[1]
    assert sorted(claimed) == sorted(s.id for s in sources)  # every source once, none twice
    assert len(set(claimed)) == len(claimed)


@pytest.mark.django_db
def test_pausing_stops_the_schedule_and_resuming_makes_it_due(workspace, agent):
    source = _web_source(workspace, agent, 1, last_synced_at=timezone.now() - timezone.timedelta(days=3))
    lifecycle.source_update(source=source, paused=True)
    assert Source.unscoped.get(id=source.id).next_sync_at is None
    assert freshness.claim_due() == []
    lifecycle.source_update(source=source, paused=False)
    resumed = Source.unscoped.get(id=source.id)
    assert resumed.next_sync_at <= timezone.now() + timezone.timedelta(seconds=1)  # overdue: due now
    assert [s.id for s in freshness.claim_due()] == [source.id]


@pytest.mark.django_db
def test_a_page_waiting_on_purpose_is_judged_by_its_own_deadline(workspace, agent, settings):
    settings.CRAWL_STALLED_AFTER = 60
    settings.CRAWL_MAX_ATTEMPTS = 0  # no attempt left: what is overdue fails (put back in line otherwise)
    source = _web_source(workspace, agent, status="crawling")
    long_ago = timezone.now() - timezone.timedelta(hours=2)
    with workspace_scope(workspace.id):
        waiting = Document.objects.create(
            source=source,
            url="http://site0.test/a",
            status="pending",
            due_by=timezone.now() + timezone.timedelta(minutes=50),  # the site said: come back in an hour
        )
        overdue = Document.objects.create(
            source=source, url="http://site0.test/b", status="pending", due_by=timezone.now()
        )
        stalled = Document.objects.create(source=source, url="http://site0.test/c", status="crawling")
    Document.unscoped.filter(id__in=[waiting.id, overdue.id, stalled.id]).update(updated_at=long_ago)
    assert sweep_stalled()["documents_failed"] == 2
    assert Document.unscoped.get(id=waiting.id).status == "pending"
    assert Document.unscoped.get(id=overdue.id).failure_class == "interrupted"
    assert Document.unscoped.get(id=stalled.id).status == "failed"


def test_a_source_that_indexed_nothing_says_why():
    assert nothing_indexed([], "The sitemap lists no pages.")[0] == "The sitemap lists no pages."
    robots = [("robots", "The site's robots.txt asks crawlers not to fetch this page.", "d")] * 3
    assert nothing_indexed(robots, "")[0] == "robots.txt disallows every page."
    mixed = [("timeout", "slow", "d")] * 12 + [("not_found", "404", "d")] * 3
    assert nothing_indexed(mixed, "")[0] == "Every page failed: 12 timeouts, 3 not found."
    assert (
        nothing_indexed([("not_found", "This page doesn't exist.", "d")], "")[0] == "This page doesn't exist."
    )


@pytest.mark.django_db
def test_crawl_delay_spaces_a_hosts_pages_and_waiters_line_up(settings):
    settings.CRAWL_PER_HOST_CONCURRENCY = 2
    url = f"http://delay-{time.monotonic_ns()}.test/page"
    first = hosts.acquire(url, crawl_delay=1.0)
    assert first.granted
    second, third = hosts.acquire(url, crawl_delay=1.0), hosts.acquire(url, crawl_delay=1.0)
    # Not granted at once, although a slot is free: the site asks for a second between requests. The
    # waiters get turns one interval apart, not "ask again in 2 s" for everyone.
    assert not second.granted and 0.8 <= second.wait <= 1.01
    assert not third.granted and 1.8 <= third.wait <= 2.01
    assert hosts.acquire(url, crawl_delay=1.0, reserved_at=second.reserved_at).granted is False  # too early
    time.sleep(second.wait)
    turn = hosts.acquire(url, crawl_delay=1.0, reserved_at=second.reserved_at)
    assert turn.granted
    hosts.release(url, first.lease)
    hosts.release(url, turn.lease)


@pytest.mark.django_db
def test_a_page_woken_just_before_its_turn_waits_for_it_and_keeps_it():
    url = f"http://early-{time.monotonic_ns()}.test/page"
    first = hosts.acquire(url, crawl_delay=1.0)
    second = hosts.acquire(url, crawl_delay=1.0)
    later = hosts.acquire(url, crawl_delay=1.0)
    assert not second.granted and not later.granted
    # A countdown that fires 0.3 s early (brokers are not exact): the page neither starts before its
    # reserved time, which Crawl-delay makes a floor, nor goes to the back of the line.
    time.sleep(max(0.0, second.wait - 0.3))
    turn = hosts.acquire(url, crawl_delay=1.0, reserved_at=second.reserved_at)
    assert turn.granted and time.time() >= second.reserved_at
    hosts.release(url, first.lease)
    hosts.release(url, turn.lease)


@pytest.mark.django_db
def test_a_busy_host_gives_a_bounded_wait_from_its_free_slot(settings):
    settings.CRAWL_PER_HOST_CONCURRENCY = 1
    url = f"http://busy-{time.monotonic_ns()}.test/page"
    held = hosts.acquire(url)
    waits = [hosts.acquire(url, max_wait=5.0) for _ in range(8)]
    assert not any(w.granted for w in waits)
    # One page-time apart (1 s until one is measured), not all of them "again in 2 s".
    gaps = [later.wait - earlier.wait for earlier, later in itertools.pairwise(waits[:5])]
    assert all(0.95 <= gap <= 1.05 for gap in gaps), gaps
    assert all(w.wait <= 5.0 for w in waits)
    assert all(w.reserved_at == 0.0 for w in waits[5:])  # beyond the bound: ask again later, no reservation
    hosts.release(url, held.lease)
