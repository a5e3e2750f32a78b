"""Why a call to a provider failed, sorted by what the sync can do about it. Each carries `message` for the
workspace admin and `detail` (the provider's answer) for operators."""

from __future__ import annotations


class ProviderError(Exception):
    """Retrying will not help (a 400 the provider explains, a malformed answer)."""

    def __init__(self, message: str, detail: str = "", *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or message
        self.status = status


class ProviderTransient(ProviderError):
    """Worth retrying later: 5xx, time-outs, dropped connections. Never evidence that something is gone."""


class ProviderRateLimited(ProviderTransient):
    """The provider asked us to slow down (429, Google's quota errors). Waiting spends no attempt."""

    def __init__(self, retry_after_s: float, detail: str = "") -> None:
        super().__init__("The provider is rate-limiting us; we'll retry automatically.", detail, status=429)
        self.retry_after_s = retry_after_s


class ObjectGone(ProviderError):
    """That page or file answered 404 or 403: deleted upstream, or no longer shared with us."""


class ReconnectNeeded(ProviderError):
    """The token was revoked or the refresh token refused (invalid_grant): a person must connect again."""
