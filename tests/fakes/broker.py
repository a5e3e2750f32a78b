"""What Celery hands the broker: each message as its before_task_publish signal sees it (task, the queue with
its priority, the countdown, the kwargs). Tests watch publishing there rather than on Redis, so a worker
running for other tests in the session cannot take the messages away first."""

from __future__ import annotations

import time
from datetime import datetime

import pytest
from celery.signals import before_task_publish


class Published:
    """Every message published while `sending()` is open: (task, queue[:priority], countdown, kwargs)."""

    def __init__(self, capture) -> None:
        self.capture = capture
        self.messages: list[tuple[str, str, float | None, dict]] = []

    def record(self, sender=None, routing_key=None, properties=None, headers=None, body=None, **_kw) -> None:
        priority = (properties or {}).get("priority")
        queue = f"{routing_key}:{priority}" if priority else str(routing_key)
        eta = (headers or {}).get("eta")
        countdown = (datetime.fromisoformat(eta).timestamp() - time.time()) if eta else None
        self.messages.append((sender, queue, countdown, body[1]))

    def sending(self):
        # The on-commit publishing runs when the block ends, as a commit would run it.
        return self.capture(execute=True)

    def routes(self) -> dict[str, list[str]]:
        """queue[:priority] -> the tasks published to it, in order."""
        routes: dict[str, list[str]] = {}
        for task, queue, _countdown, _kwargs in self.messages:
            routes.setdefault(queue, []).append(task)
        return routes


@pytest.fixture
def broker(django_capture_on_commit_callbacks):
    published = Published(django_capture_on_commit_callbacks)
    before_task_publish.connect(published.record, weak=False)
    try:
        yield published
    finally:
        before_task_publish.disconnect(published.record)
