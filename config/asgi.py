"""The ASGI application: what the web server runs (gunicorn with uvicorn workers, config/gunicorn.py).

One process model, two ways in (config/routing.py). Views marked `served_async` (config/streaming.py: the
chat, streamed or not) go to Django's ASGI handler: an open stream is a coroutine waiting on the event
loop rather than a server thread, and a turn waiting on a model holds no thread of the pool below. Every
other request (the REST API, the web UI, health checks) goes to Django's WSGI handler on a fixed pool of
WEB_THREADS threads (a2wsgi). Under the ASGI handler each sync view and sync middleware was a thread hop,
and each request ran in a new thread, so it could not keep a database connection and took one from the
pool: slower than a threaded server on a cached search answer (docs/BENCHMARKS.md). Threads that live
as long as the process keep their connections (DATABASE_CONN_MAX_AGE, 60 s here unless set), as a
threaded WSGI server does; a request served by the ASGI handler closes its own when it finishes.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
# Persistent connections for the threads of the WSGI pool; the settings turn the connection pool off then
# (Django refuses both at once). A deployment may still set 0 (a connection per request, pooled).
os.environ.setdefault("DATABASE_CONN_MAX_AGE", "60")

from django.core.asgi import get_asgi_application
from django.core.wsgi import get_wsgi_application

from config.routing import Router

#: Django's ASGI handler for every request, as served before issue #17 (the search bench's `asgi-django`).
django_asgi = get_asgi_application()

application = Router(
    asgi=django_asgi,
    wsgi=get_wsgi_application(),
    threads=int(os.environ.get("WEB_THREADS", "8")),
    starts=int(os.environ.get("WEB_CHAT_STARTS", "16")),
)
