"""The Celery application. Queues, routes, acks_late, prefetch and time limits live in settings."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("grounded")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
