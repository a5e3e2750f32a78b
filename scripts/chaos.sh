#!/usr/bin/env bash
# `make chaos`: the fault harness (scripts/chaos.py; docs/RELIABILITY.md has the mechanisms and figures).
# Bounded (each fault settles within 10 minutes or its row says NOT SETTLED) and loopback only. It starts and
# stops its own PostgreSQL cluster, Redis server, test site, fake embedder and Celery workers on free ports
# under /var/tmp/grounded-chaos-*, and touches no other server or process. Arguments go to the driver:
#   make chaos ARGS="--quick"              clean, pool_kill, worker_kill (what CI runs)
#   make chaos ARGS="--only redis_lost"    one fault (after the clean run)
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in redis-server pg_config; do
  command -v "$tool" >/dev/null || { echo "chaos: $tool is missing; run 'make setup' first." >&2; exit 2; }
done
[ -x .venv/bin/python ] || { echo "chaos: no .venv; run 'make setup' first." >&2; exit 2; }
exec .venv/bin/python scripts/chaos.py "$@"
