#!/usr/bin/env bash
# `make run`: set up (see setup.sh), migrate, seed the demo workspace, and run the web server and the
# Celery workers for the `crawl` and `index` queues in the foreground. Ctrl-C stops every process this
# script started (including PostgreSQL and Redis, if it was this run that started them) and nothing else.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
# shellcheck disable=SC1091
source .local/env
export DJANGO_SETTINGS_MODULE="${DJANGO_SETTINGS_MODULE:-config.settings.local}"
# DEBUG off, as in production: unknown URLs get the product's 404 page, not Django's debug page (which lists
# every URL pattern to anyone); whitenoise serves the static files collectstatic gathers below.
export DJANGO_DEBUG="${DJANGO_DEBUG:-false}"
# Metrics of every process (web workers, Celery pool processes) in one directory, emptied at each start.
export PROMETHEUS_MULTIPROC_DIR="${PROMETHEUS_MULTIPROC_DIR:-$ROOT/.local/metrics}"
rm -rf "$PROMETHEUS_MULTIPROC_DIR" && mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
PORT="${PORT:-8000}"
PY=.venv/bin/python

$PY manage.py migrate --noinput -v 0
$PY manage.py collectstatic --noinput -v 0

pids=()
cleanup() {
  trap - INT TERM EXIT
  echo
  echo "Stopping Grounded..."
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "${GROUNDED_STARTED_REDIS:-}" = 1 ]; then
    redis-cli -u "$REDIS_URL" shutdown nosave >/dev/null 2>&1 || true
  fi
  if [ "${GROUNDED_STARTED_PG:-}" = 1 ]; then
    su postgres -s /bin/sh -c "/usr/lib/postgresql/15/bin/pg_ctl -D '$GROUNDED_PGDATA' -m fast stop" >/dev/null 2>&1 || true
  fi
  echo "Stopped."
}
trap cleanup INT TERM EXIT

# The same server as the image: uvicorn workers under gunicorn, serving the ASGI application.
WEB_BIND_HOST=127.0.0.1 PORT="$PORT" LOG_FORMAT="${LOG_FORMAT:-console}" \
  .venv/bin/gunicorn config.asgi:application -c config/gunicorn.py &
pids+=($!)
export LOG_FORMAT="${LOG_FORMAT:-console}"  # people read this terminal; the image logs JSON
.venv/bin/celery -A config worker -Q interactive,crawl -n "crawl@%h" --concurrency 2 --loglevel INFO &
pids+=($!)
.venv/bin/celery -A config worker -Q interactive,index -n "index@%h" --concurrency 1 --loglevel INFO &
pids+=($!)
.venv/bin/celery -A config beat --schedule .local/celerybeat-schedule --loglevel INFO &
pids+=($!)

echo
echo "Grounded demo workspace:"
$PY manage.py seed_demo --key-file .local/demo-key.json
cat <<EOT
Grounded is running.
  web UI:     http://127.0.0.1:$PORT/app/   (sign in with the login above)
  admin:      http://127.0.0.1:$PORT/admin/
  API:        http://127.0.0.1:$PORT/api/v1/  (schema at /api/v1/schema)
  try:        curl -H "Authorization: Bearer \$KEY" "http://127.0.0.1:$PORT/api/v1/search?q=what+is+grounded"
Press Ctrl-C to stop.
EOT
wait -n "${pids[@]}"
