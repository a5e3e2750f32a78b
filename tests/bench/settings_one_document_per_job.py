"""The test settings with one document per index job: how indexing behaved before issue #16 (the pipeline
benchmark's own baseline, tests/bench/test_pipeline_bench.py)."""

from config.settings.test import *  # noqa: F403

INDEX_BATCH_MAX_DOCUMENTS = 1
