"""The ASGI application: what the web server runs (gunicorn with uvicorn workers, config/gunicorn.py).

Under ASGI the widget's chat stream is an async response, so an open stream is a coroutine waiting on the
event loop rather than a server thread; the rest of the site runs as ordinary sync views, which Django runs
in its thread pool.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
application = get_asgi_application()
