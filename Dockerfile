# One image for the web server, the Celery workers and beat (docker-compose.yml picks the command).
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DJANGO_SETTINGS_MODULE=config.settings.production
RUN apt-get update && apt-get install -y --no-install-recommends chromium tesseract-ocr tesseract-ocr-eng \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements.lock .
RUN pip install --no-cache-dir --require-hashes --no-deps -r requirements.lock
COPY . .
RUN DJANGO_SECRET_KEY=build-only FIELD_ENCRYPTION_KEYS=build-only python manage.py collectstatic --noinput -v 0
RUN useradd --system --home /app grounded && mkdir -p /app/media && chown grounded /app/media
USER grounded
EXPOSE 8000
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--worker-class", "gthread", "--threads", "4"]
