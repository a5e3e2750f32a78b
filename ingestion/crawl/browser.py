"""The headless-browser strategy: Debian's Chromium, driven by Playwright, for pages built by scripts.

The browser never talks to the network itself. Every request it makes (the page, its scripts, its XHRs,
frames, redirects) is caught by a route handler and fetched through `safety.fetch`, which checks and pins
the address; the browser only sees the answer. Whatever might slip past the handler is sent to a dead proxy
port, service workers are blocked and WebSockets are closed, so there is no second path out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urljoin

import httpx
from celery.exceptions import SoftTimeLimitExceeded

from checked_http.errors import error_for_status
from ingestion.crawl.base import FetchedPage, StrategyUnavailable
from ingestion.crawl.fetch import (
    BlockedAddressError,
    FetchError,
    FetchPolicy,
    PermanentFetchError,
    TransientFetchError,
    check_url,
    fetch,
    same_site,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright, Route, WebSocketRoute

CHROMIUM_PATH = "/usr/bin/chromium"
LAUNCH_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--dns-prefetch-disable",
    # Requests the route handler doesn't see go to a port nothing listens on, loopback included.
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
)
# Text is what we keep; pictures, video and fonts only cost time.
SKIPPED_RESOURCE_TYPES = frozenset({"image", "media", "font"})
MAX_SUBREQUESTS = 150
SETTLE_MS = 2000  # after "load", how long to wait for the network to go quiet
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-encoding", "content-length", "host", "upgrade"}
)


class BrowserStrategy:
    """Use as a context manager to keep one Chromium for many pages; otherwise each page launches its own."""

    name = "browser"

    def __init__(
        self,
        *,
        executable_path: str = CHROMIUM_PATH,
        settle_ms: int = SETTLE_MS,
        max_subrequests: int = MAX_SUBREQUESTS,
    ) -> None:
        self.executable_path = executable_path
        self.settle_ms = settle_ms
        self.max_subrequests = max_subrequests
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None

    def __enter__(self) -> BrowserStrategy:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def open(self) -> None:
        if self._browser is not None:
            return
        if not Path(self.executable_path).exists():
            raise StrategyUnavailable(f"no Chromium at {self.executable_path} (apt-get install chromium)")
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as exc:
            raise StrategyUnavailable("the playwright package is not installed") from exc
        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(
                executable_path=self.executable_path, args=list(LAUNCH_ARGS), headless=True
            )
        except SoftTimeLimitExceeded:
            raise  # the task's time limit: the task decides what a timeout means
        except Exception as exc:
            self.close()
            raise StrategyUnavailable(f"Chromium did not start: {exc}") from exc

    def close(self) -> None:
        if self._browser is not None:
            self._browser.close()
            self._browser = None
        if self._playwright is not None:
            self._playwright.stop()
            self._playwright = None

    def fetch_page(
        self, url: str, policy: FetchPolicy, *, headers: Mapping[str, str] | None = None
    ) -> FetchedPage:
        """Render `url` and return the HTML its scripts built. Raises the FetchErrors safety.fetch raises."""
        check_url(url, policy)
        owns_browser = self._browser is None
        self.open()
        try:
            return self._render(url, policy, headers or {})
        finally:
            if owns_browser:
                self.close()

    def _render(self, url: str, policy: FetchPolicy, headers: Mapping[str, str]) -> FetchedPage:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        assert self._browser is not None
        context = self._browser.new_context(
            user_agent=policy.user_agent,
            service_workers="block",
            accept_downloads=False,
            extra_http_headers=dict(headers),
        )
        router = _Router(policy, self.max_subrequests, time.monotonic() + policy.total_timeout_s)
        try:
            context.route("**/*", router.handle)
            context.route_web_socket("**/*", _close_web_socket)
            page = context.new_page()
            target = url
            # Chromium does not route the request that follows a fulfilled redirect, so the page's own
            # redirects are followed here, each hop a new navigation that the router checks.
            for _hop in range(policy.max_redirects + 1):
                router.main_error, router.redirect_to = None, None
                try:
                    response = page.goto(target, wait_until="load", timeout=router.remaining_ms())
                except PlaywrightError as exc:
                    if router.main_error is not None:
                        raise router.main_error from None
                    if router.redirect_to is None:
                        raise TransientFetchError(
                            "The page didn't finish loading in the browser; we'll retry automatically.",
                            f"{target}: {exc}",
                        ) from exc
                if router.main_error is not None:
                    raise router.main_error
                if router.redirect_to is None:
                    break
                target = _redirect_target(target, router.redirect_to, policy)
            else:
                raise PermanentFetchError(
                    "This page redirects too many times, so we stopped following it.", f"{url} in the browser"
                )
            # Pages that poll forever are rendered as they are when the wait ends.
            with contextlib.suppress(PlaywrightTimeout):
                page.wait_for_load_state("networkidle", timeout=min(self.settle_ms, router.remaining_ms()))
            html = page.content()
            return FetchedPage(
                url=url,
                final_url=page.url,
                status=response.status if response is not None else 200,
                content_type="text/html",
                body=html.encode("utf-8"),
                encoding="utf-8",
                strategy=self.name,
                headers=response.headers if response is not None else {},
                blocked_requests=tuple(router.blocked),
            )
        finally:
            context.close()


def _redirect_target(current: str, location: str, policy: FetchPolicy) -> str:
    target = check_url(urljoin(current, location), policy)
    if policy.same_host_redirects_only and not same_site(target.host, httpx.URL(current).host):
        raise PermanentFetchError(
            f"This page redirects to another website ({target.host}), which we don't follow for this source. "
            "Use the address it redirects to instead.",
            f"browser redirect from {current} to {target} left the host",
        )
    return str(target)


def _close_web_socket(ws: WebSocketRoute) -> None:
    ws.close(code=1008, reason="WebSockets are not allowed while crawling")


class _Router:
    """Fetches each browser request through safety.fetch and fulfils it with the answer."""

    def __init__(self, policy: FetchPolicy, max_subrequests: int, deadline: float) -> None:
        self.policy = policy
        self.max_subrequests = max_subrequests
        self.deadline = deadline
        self.subrequests = 0
        self.blocked: list[str] = []
        self.main_error: FetchError | None = None
        self.redirect_to: str | None = None

    def remaining_ms(self) -> float:
        return max(1.0, (self.deadline - time.monotonic()) * 1000)

    def handle(self, route: Route) -> None:
        request = route.request
        is_main = request.is_navigation_request() and request.frame.parent_frame is None
        if not is_main:
            self.subrequests += 1
            if request.resource_type in SKIPPED_RESOURCE_TYPES or self.subrequests > self.max_subrequests:
                route.abort("blockedbyclient")
                return
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            route.abort("timedout")
            return
        forwarded = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        try:
            result = fetch(
                request.url,
                _with_timeout(self.policy, remaining),
                headers=forwarded,
                method=request.method,
                content=request.post_data_buffer,
                follow_redirects=not is_main,
                raise_for_status=False,  # sub-requests get their status; the page's own is classified below
            )
        except BlockedAddressError as exc:
            self.blocked.append(request.url)
            self._fail(route, is_main, exc, "blockedbyclient")
            return
        except FetchError as exc:
            self._fail(route, is_main, exc, "failed")
            return
        if is_main and result.status in (301, 302, 303, 307, 308):
            self.redirect_to = result.headers["location"]
            route.abort("aborted")
            return
        if is_main and result.status >= 400:
            retry_after = result.headers.get("retry-after")
            self._fail(
                route, True, error_for_status(result.status, request.url, retry_after, result.body), "failed"
            )
            return
        route.fulfill(
            status=result.status,
            headers={k: v for k, v in result.headers.items() if k not in _HOP_BY_HOP},
            body=result.body,
        )

    def _fail(self, route: Route, is_main: bool, error: FetchError, reason: str) -> None:
        if is_main and self.main_error is None:
            self.main_error = error
        route.abort(reason)


def _with_timeout(policy: FetchPolicy, remaining: float) -> FetchPolicy:
    return dataclasses.replace(policy, total_timeout_s=min(policy.total_timeout_s, remaining))
