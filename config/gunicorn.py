"""gunicorn's settings for the web server (`gunicorn config.asgi:application -c config/gunicorn.py`).

Variables: PORT (8000), WEB_CONCURRENCY (worker processes, 2), WEB_BIND_HOST (0.0.0.0), WEB_TIMEOUT (120 s:
a worker silent that long is restarted), WEB_WORKER_CLASS (uvicorn's ASGI worker; `gthread` with
config.wsgi for the old threaded server, e.g. to compare in the benchmark), WEB_THREADS (gthread's threads;
under uvicorn, config/asgi.py reads it for the thread pool that serves every view but the chat, 8).
"""

import os

bind = f"{os.environ.get('WEB_BIND_HOST', '0.0.0.0')}:{os.environ.get('PORT', '8000')}"  # noqa: S104
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_class = os.environ.get("WEB_WORKER_CLASS", "uvicorn_worker.UvicornWorker")
threads = int(os.environ.get("WEB_THREADS", "4"))  # gthread only
timeout = int(os.environ.get("WEB_TIMEOUT", "120"))
graceful_timeout = 30
keepalive = 5
accesslog = None  # django-structlog logs every request as a JSON line with its request id
errorlog = "-"
loglevel = os.environ.get("WEB_LOG_LEVEL", "warning")


def child_exit(server: object, worker: object) -> None:
    # Multiprocess metrics: a dead worker's live gauges must not be added up any more.
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[attr-defined]
