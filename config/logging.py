"""Structured logs: one JSON object per line, from our code, Django, Celery and libraries alike.

django-structlog binds a `request_id` to every line a request logs and passes it to the Celery tasks the
request queues (in the task's headers), where it is bound again; so one id follows an upload from the API
call through the crawl and index tasks. `operator_detail()` puts it into the operator-facing error detail of
a failed source, so a failure seen in the admin can be found in the logs. Sentry is set up only when
SENTRY_DSN is set.
"""

from __future__ import annotations

from typing import Any

import structlog

SHARED_PROCESSORS: list[Any] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    structlog.stdlib.PositionalArgumentsFormatter(),
    structlog.processors.StackInfoRenderer(),
]


def logging_config(log_format: str, level: str) -> dict[str, Any]:
    """Django's LOGGING: every stdlib record goes through structlog's formatter, so library logs are JSON
    too. Also configures structlog itself (once per process, from settings, as django-structlog advises)."""
    structlog.configure(
        processors=[
            *SHARED_PROCESSORS,
            structlog.stdlib.filter_by_level,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    renderer: Any = (
        structlog.dev.ConsoleRenderer(colors=False)
        if log_format == "console"
        else structlog.processors.JSONRenderer()
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "structured": {
                "()": structlog.stdlib.ProcessorFormatter,
                "processors": [
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info,
                    renderer,
                ],
                "foreign_pre_chain": SHARED_PROCESSORS,
            }
        },
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "structured"}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # django-structlog logs request_finished at INFO (request_started at DEBUG): one line a request.
            "django_structlog": {"level": level},
        },
    }


def current_request_id() -> str:
    return str(structlog.contextvars.get_contextvars().get("request_id") or "")


def operator_detail(detail: str) -> str:
    """An error detail for operators, with the request id that started the work (when there was one)."""
    request_id = current_request_id()
    return f"{detail}\n[request_id={request_id}]" if request_id and request_id not in detail else detail


def init_sentry(dsn: str, *, environment: str, traces_sample_rate: float) -> bool:
    """Initialise Sentry when a DSN is configured; otherwise do nothing (and import nothing)."""
    if not dsn:
        return False
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration

    sentry_sdk.init(
        dsn=dsn,
        environment=environment,
        traces_sample_rate=traces_sample_rate,
        integrations=[DjangoIntegration(), CeleryIntegration()],
        send_default_pii=False,  # visitors' messages and addresses stay out of error reports
    )
    return True
