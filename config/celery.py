"""The Celery application. Queues, routes, acks_late, prefetch and time limits live in settings."""

import os

from celery import Celery
from django_structlog.celery.steps import DjangoStructLogInitStep

from config import metrics

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("grounded")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The request id a task was queued with is bound to its log lines (django-structlog reads the task headers).
app.steps["worker"].add(DjangoStructLogInitStep)
metrics.connect_celery_signals()
