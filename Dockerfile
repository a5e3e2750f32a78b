# One image for the web server, the Celery workers and beat (docker-compose.yml picks the command).
# BASE_IMAGE: Debian 12 with Python 3.11 (the default), or plain Debian 12, e.g. one made with debootstrap
# where no image registry is reachable (python3 is installed from Debian then; see README "Deployment").
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=config.settings.production \
    PATH=/opt/venv/bin:$PATH \
    PROMETHEUS_MULTIPROC_DIR=/run/grounded/metrics

# System packages: the `image` lines of the one list that scripts/setup.sh also installs from.
COPY scripts/system-packages.txt /tmp/system-packages.txt
RUN set -eux; \
    packages="$(sed -e 's/#.*//' /tmp/system-packages.txt | awk '$2 == "image" {print $1}')"; \
    if ! python3 -c 'import ensurepip' 2>/dev/null; then packages="$packages python3 python3-venv"; fi; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $packages; \
    rm -rf /var/lib/apt/lists/* /tmp/system-packages.txt

# Runtime dependencies only (no test tools): requirements-runtime.lock, hashed, from pyproject's main list.
RUN python3 -m venv /opt/venv
WORKDIR /app
COPY requirements-runtime.lock .
RUN pip install --no-cache-dir --require-hashes --no-deps -r requirements-runtime.lock

COPY . .
# Metrics in single-process mode here, so the build leaves no files in the metrics directory.
RUN PROMETHEUS_MULTIPROC_DIR= DJANGO_SECRET_KEY=build-only FIELD_ENCRYPTION_KEYS=build-only \
    python manage.py collectstatic --noinput -v 0

# A fixed, non-root uid (so an orchestrator's runAsNonRoot can check it); it owns only what it writes.
RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin grounded \
    && mkdir -p /app/media /run/grounded/metrics \
    && chown grounded /app/media /run/grounded/metrics
USER 10001
EXPOSE 8000
# ASGI (uvicorn workers under gunicorn): a chat stream waits on the event loop, not in a thread of its own.
CMD ["gunicorn", "config.asgi:application", "-c", "config/gunicorn.py"]
