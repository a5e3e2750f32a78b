#!/usr/bin/env bash
# `make bench`: benchmarks that print figures beside a baseline measured in the same run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
# shellcheck disable=SC1091
source .local/env
export DJANGO_SETTINGS_MODULE=config.settings.test
.venv/bin/python -m pytest -m bench -q -p no:randomly -s "$@"
