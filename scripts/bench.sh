#!/usr/bin/env bash
# `make bench`: benchmarks that print figures beside a baseline measured in the same run.
#   1. crawl + extract and parsing throughput (tests/bench/test_ingestion_bench.py)
#   1a. extraction beside the extractor before issue #16, page by page (tests/bench/test_extract_bench.py)
#   1a'. end-to-end crawl + index on real workers beside the raw embedder (tests/bench/test_pipeline_bench.py;
#       ~6 min on 2 cores: the Flask docs, then a generated 120-page site batched and one document per job)
#   1a''. how much of each shared site reaches the index beside trafilatura's selection, and each shared document
#       beside a plain reader (tests/bench/test_fidelity_bench.py, test_document_fidelity_bench.py; issue #52)
#   1b. PDF text-layer pages/s beside pypdf (tests/bench/test_parsing_bench.py)
#   1b'. sentence segmentation of the Flask docs' chunks beside pysbd as shipped (tests/bench/test_segment_bench.py)
#   1b''. small index jobs: batches cut by padding beside fixed batches of 32 (tests/bench/test_padding_bench.py)
#   1c. a no-change re-sync of the 77-page Flask site beside its first crawl (tests/bench/test_resync_bench.py)
#   1c. 300 concurrent widget chat streams, ASGI beside the old threaded server (tests/bench/test_streaming_bench.py;
#       GROUNDED_BENCH_STREAMS for another count)
#   1d. fair work across workspaces: a text source in workspace B idle and during workspace A's 150-page
#       crawl, lanes off (first come, first served) beside lanes on (tests/bench/test_fairness_bench.py; ~6 min)
#   1d'. lanes by work (issue #56): batches of 1, 5 and 20 text sources in workspace B idle and during workspace A's
#       120-page crawl and 100-page Notion sync (tests/bench/test_lanes_bench.py; ~8 min)
#   1d''. a delete racing an index job (issue #56): 100 sources and pushed batches deleted 0-0.15 s after their
#       creation (batches: after their first passage) on real workers: errors, rows left, audit_store
#       (tests/bench/test_delete_race_bench.py; ~6 min)
#   1e. metering's cost per event beside a Redis counter (tests/bench/test_metering_bench.py; ~1 min)
#   2. retrieval at scale: one workspace of 100,000 then 1,000,000 synthetic chunks
#      (GROUNDED_BENCH_SIZES="100000" for the shorter run; the 1M run takes tens of minutes on 2 cores)
#   3. the search API's latency over HTTP (gunicorn on 127.0.0.1) on SciFact's 5,748 chunks, beside the
#      raw parts of a search, vectors searched in PostgreSQL (asgi-store) beside in memory (asgi)
#      (tests/bench/test_search_latency.py; ~3 min)
# Retrieval quality on SciFact is `manage.py evaluate_retrieval`; see docs/BENCHMARKS.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
# shellcheck disable=SC1091
source .local/env
export DJANGO_SETTINGS_MODULE=config.settings.test
.venv/bin/python -m pytest tests/bench/test_ingestion_bench.py -m bench -q -s "$@"
.venv/bin/python -m pytest tests/bench/test_extract_bench.py -m bench -q -s "$@"
GROUNDED_BENCH_FIDELITY=full .venv/bin/python -m pytest tests/bench/test_fidelity_bench.py -m bench -q -s "$@"
.venv/bin/python -m pytest tests/bench/test_document_fidelity_bench.py -m bench -q -s "$@"
GROUNDED_BENCH_PIPELINE=full .venv/bin/python -m pytest tests/bench/test_pipeline_bench.py -m bench -q -s "$@"
.venv/bin/python -m pytest tests/bench/test_parsing_bench.py -m bench -q -s "$@"
GROUNDED_BENCH_SEGMENT=full .venv/bin/python -m pytest tests/bench/test_segment_bench.py -m bench -q -s "$@"
GROUNDED_BENCH_PADDING=full .venv/bin/python -m pytest tests/bench/test_padding_bench.py -m bench -q -s "$@"
GROUNDED_BENCH_SEARCH_DOCS=all GROUNDED_BENCH_SEARCH_QUERIES=200 GROUNDED_BENCH_SEARCH_SERVER=asgi-store,asgi \
  .venv/bin/python -m pytest tests/bench/test_search_latency.py -m bench -q -s "$@"
GROUNDED_BENCH_RESYNC=full .venv/bin/python -m pytest tests/bench/test_resync_bench.py -m bench -q -s "$@"
.venv/bin/python -m pytest tests/bench/test_streaming_bench.py -m bench -q -s "$@"
GROUNDED_BENCH_FAIRNESS=full .venv/bin/python -m pytest tests/bench/test_fairness_bench.py -m bench -q -s "$@"
GROUNDED_BENCH_LANES=full .venv/bin/python -m pytest tests/bench/test_lanes_bench.py -m bench -q -s "$@"
.venv/bin/python -m pytest tests/bench/test_delete_race_bench.py -m bench -q -s "$@"
.venv/bin/python -m pytest tests/bench/test_metering_bench.py -m bench -q -s "$@"
for chunks in ${GROUNDED_BENCH_SIZES:-100000 1000000}; do
  GROUNDED_BENCH_CHUNKS="$chunks" .venv/bin/python -m pytest tests/bench/test_retrieval_scale.py -m bench -q -s "$@"
done
