"""The test suite: the same real services as development, with fast password hashing."""

import os
import zlib

from .base import *  # noqa: F403
from .base import CELERY_BROKER_TRANSPORT_OPTIONS, DATABASES, env

# Concurrent test sessions (a developer's and a helper's) must not share a test database, queues or
# Redis keys. The session's worker processes inherit the id through GROUNDED_TEST_RUN.
TEST_RUN_ID = env("GROUNDED_TEST_RUN", default=str(os.getpid()))
DATABASES["default"]["TEST"] = {"NAME": f"test_grounded_{TEST_RUN_ID}"}
# No pool in the test process and its workers: pytest-django renames the database after settings load, and
# each test's transaction needs its own connection. Servers started by tests use the production path.
DATABASES["default"].get("OPTIONS", {}).pop("pool", None)
REDIS_KEY_PREFIX = f"t{TEST_RUN_ID}:"
# Kept key rows are forgotten on a committed change; most tests change keys and workspaces inside a
# transaction that never commits, so they read keys every time. tests/sources/api/test_key_rows.py
# tests the kept rows with committed changes, and the search latency bench serves with them.
API_KEY_CACHE = env.bool("API_KEY_CACHE", default=False)

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Mail stays in django.core.mail.outbox, where the tests read confirmation links and invitations.
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# allauth's per-address and per-IP limits would trip over a suite that signs up many people from 127.0.0.1.
ACCOUNT_RATE_LIMITS = False
# Tests use their own Redis databases, so they never see a running dev server's queues or cache, and
# clearing the cache between tests cannot drop the broker's queue bindings.
_redis_server = env("REDIS_URL", default="redis://127.0.0.1:63799/0").rsplit("/", 1)[0]
REDIS_URL = f"{_redis_server}/15"
CACHES = {
    "default": {
        "BACKEND": "config.redis_cache.RedisCache",  # as deployed
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": REDIS_KEY_PREFIX,
    }
}
CELERY_BROKER_URL = f"{_redis_server}/14"
CELERY_BROKER_TRANSPORT_OPTIONS = {**CELERY_BROKER_TRANSPORT_OPTIONS, "global_keyprefix": REDIS_KEY_PREFIX}
# collectstatic is not part of the test run; whitenoise would warn about the missing directory.
WHITENOISE_AUTOREFRESH = True

# Test sites run on 127.0.0.1, so loopback alone is allowed; every other private range stays refused
# (a redirect to 10.0.0.1 must fail without connecting). Tests of the default override this.
CRAWL_ALLOWED_NETWORKS = ["127.0.0.0/8"]
CRAWL_MAX_RATE_LIMIT_REQUEUES = 2
CRAWL_RETRY_BACKOFF = [0.2, 0.2, 0.2]
CRAWL_RATE_LIMIT_WAIT = 0.2
INDEX_FAN_OUT_AT = 3  # so worker tests of small sites exercise the one-job-per-document path
CRAWL_HOST_WAIT_SECONDS = 0.2
SYNC_JITTER_SECONDS = 0.0
CRAWL_FETCH_TIMEOUT = 3.0
CRAWL_MAX_SOURCE_BYTES = 2 * 1024 * 1024  # so the oversized-page test needs only a 3 MB body
# Shared by the test process and its worker processes (same run id), apart from a developer's media.
MEDIA_ROOT = BASE_DIR / ".local" / f"test-media-{TEST_RUN_ID}"  # noqa: F405

# The fake Notion and Google servers (tests/fakes/) listen on ports derived from the run id, so the run's
# worker processes, which read these settings when they start, reach the servers the tests run.
# Below Linux's ephemeral range (32768+), so an outgoing connection cannot already hold it.
_fake_port = 20000 + zlib.crc32(TEST_RUN_ID.encode()) % 6000 * 2
NOTION_API_BASE_URL = f"http://127.0.0.1:{_fake_port}"
GOOGLE_AUTH_URL = f"http://127.0.0.1:{_fake_port + 1}/o/oauth2/v2/auth"
GOOGLE_OAUTH_BASE_URL = f"http://127.0.0.1:{_fake_port + 1}"
GOOGLE_API_BASE_URL = f"http://127.0.0.1:{_fake_port + 1}"
NOTION_CLIENT_ID, NOTION_CLIENT_SECRET = "notion-test-client", "notion-test-secret"
GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET = "google-test-client.apps.googleusercontent.com", "google-test-secret"
NOTION_REQUESTS_PER_SECOND = 50.0
INTEGRATIONS_RETRY_BACKOFF = [0.2, 0.2]
INTEGRATIONS_MAX_RATE_LIMIT_REQUEUES = 3
