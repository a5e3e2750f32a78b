#!/usr/bin/env bash
# `make test`: the same set-up as `make run`, then the whole suite on the real services.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
# shellcheck disable=SC1091
source .local/env
export DJANGO_SETTINGS_MODULE=config.settings.test
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
.venv/bin/python -m pytest "$@"
