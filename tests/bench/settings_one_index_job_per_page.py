"""The test settings with one index job queued per crawled page, as before ingestion/index_wakeups.py: the
pipeline benchmark's baseline for coalesced index jobs (tests/bench/test_pipeline_bench.py)."""

from config.settings.test import *  # noqa: F403

INDEX_COALESCE_PAGE_JOBS = False
