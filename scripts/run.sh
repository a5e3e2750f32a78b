#!/usr/bin/env bash
# `make run`: set up (see setup.sh), migrate, seed the demo workspace, and run the web server and the
# Celery workers for the `crawl` and `index` queues in the foreground. Ctrl-C, or a SIGTERM/SIGHUP to its
# process group, stops every process this script started (including PostgreSQL and Redis, if it was this
# run that started them) and nothing else.
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

pids=()
stopping=0
# How long the web server and the workers get to stop (a worker finishes its running task) before they
# are killed: the stop is bounded, since further signals are ignored while it runs.
STOP_TIMEOUT="${GROUNDED_STOP_TIMEOUT:-20}"
# Stops every process this script started, then the PostgreSQL and Redis setup.sh started for it, once.
# Nothing may end it half-way (#56: a `kill -- -PGID` left them running 7 times in 11): further INT, TERM
# and HUP are ignored from its first line on (the group's signal reaches the script and its children
# together, and a repeated one used to find the default action back in place); so is PIPE, and no failing
# command ends it (-e off): whatever read our output (`make run | tee`, a supervisor) may have died with
# the group, and a message written to it must not stop the stop. The servers are stopped in their own
# session, out of reach of a signal to this group.
cleanup() {
  trap '' INT TERM HUP PIPE
  set +e
  [ "$stopping" = 1 ] && return
  stopping=1
  echo
  echo "Stopping Grounded..."
  local pid alive deadline=$((SECONDS + STOP_TIMEOUT))
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  while :; do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "Still running after ${STOP_TIMEOUT}s (GROUNDED_STOP_TIMEOUT): killing them."
      for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
      break
    fi
    sleep 0.2
  done
  wait 2>/dev/null || true
  if [ "${GROUNDED_STARTED_REDIS:-}" = 1 ]; then
    setsid -w redis-cli -u "$REDIS_URL" shutdown nosave >/dev/null 2>&1 || true
  fi
  if [ "${GROUNDED_STARTED_PG:-}" = 1 ]; then
    setsid -w su postgres -s /bin/sh -c "/usr/lib/postgresql/15/bin/pg_ctl -D '$GROUNDED_PGDATA' -m fast stop" >/dev/null 2>&1 || true
  fi
  echo "Stopped."
}
# Installed before anything that may take a while (migrations, collectstatic): a stop at any point after
# set-up stops the servers. A signal stops and exits; a child that dies on its own ends `wait -n`, then EXIT.
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 129' HUP
trap cleanup EXIT

$PY manage.py migrate --noinput -v 0
$PY manage.py collectstatic --noinput -v 0

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
