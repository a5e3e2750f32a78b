#!/usr/bin/env bash
# `make test`: the same set-up as `make run`, then the whole suite on the real services.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
# shellcheck disable=SC1091
source .local/env
export DJANGO_SETTINGS_MODULE=config.settings.test
# Stop the PostgreSQL and Redis this run started (and only those), so a finished test run leaves no server
# holding a port; servers that were already running (a `make run`, another test run) are left alone.
stop_started() {
  if [ "${GROUNDED_STARTED_REDIS:-}" = 1 ]; then
    redis-cli -u "$REDIS_URL" shutdown nosave >/dev/null 2>&1 || true
  fi
  if [ "${GROUNDED_STARTED_PG:-}" = 1 ]; then
    su postgres -s /bin/sh -c "/usr/lib/postgresql/15/bin/pg_ctl -D '$GROUNDED_PGDATA' -m fast stop" >/dev/null 2>&1 || true
  fi
}
trap stop_started EXIT
# The fp32 reference model that the embedder's accuracy test compares against (tests only; installed
# without its torch dependencies on purpose).
ref_sum=$(sha256sum requirements-reference.lock | cut -d' ' -f1)
if [ "$(cat .venv/.reference-sha256 2>/dev/null)" != "$ref_sum" ]; then
  .venv/bin/pip install -q --require-hashes --no-deps -r requirements-reference.lock >.local/pip-reference.log 2>&1 \
    || { cat .local/pip-reference.log >&2; exit 1; }
  echo "$ref_sum" >.venv/.reference-sha256
fi
.venv/bin/ruff check .
# Dependencies point down only: the contracts in pyproject.toml ([tool.importlinter]).
.venv/bin/lint-imports --no-cache >/dev/null || .venv/bin/lint-imports --no-cache
# Types: mypy with django-stubs over the packages in [tool.mypy] (pyproject.toml). Incremental: .mypy_cache
# keeps what did not change, so a run after a small edit takes seconds.
.venv/bin/mypy
status=0
.venv/bin/python -m pytest "$@" || status=$?
exit $status
