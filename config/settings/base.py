"""Settings shared by every environment. Everything that differs between deployments is read from
environment variables (see README.md for the list)."""

import logging
from pathlib import Path
from typing import Any

import environ
from kombu import Queue

from config.logging import init_sentry, logging_config

BASE_DIR = Path(__file__).resolve().parent.parent.parent
env = environ.Env()

SECRET_KEY = env("DJANGO_SECRET_KEY", default="dev-only-insecure-key-change-me")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "sources",
    "ingestion",
    "retrieval",
    "agents",
    "integrations",
    "django_structlog",
    # Sign-up, e-mail verification, log-in, password reset (sources/accounts.py adapts it).
    "allauth",
    "allauth.account",
]

MIDDLEWARE = [
    "config.metrics.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Binds a request id to every log line of the request, and hands it to the Celery tasks it queues.
    "config.request_log.RequestLogMiddleware",
    # 413 for an API request over its endpoint's body limit, before anything reads the body.
    "config.body_limits.RequestBodyLimitMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:54329/grounded")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # The same backend, whose health check below costs no round trip on a healthy connection.
    DATABASES["default"]["ENGINE"] = "config.postgres"
# 0 (a connection per request, from the pool below) unless set. The web server sets 60 (config/asgi.py):
# its views run on a fixed thread pool whose threads keep their connections, and the requests Django's ASGI
# handler serves close theirs (config/routing.py). The Celery workers keep theirs (docker-compose.yml).
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=0)
# A kept connection is checked before a request's first query, so one that PostgreSQL dropped (a restart, a
# failover) is replaced instead of failing that request (config/postgres/base.py: SELECT 1 only when the
# socket says something happened).
DATABASES["default"]["CONN_HEALTH_CHECKS"] = env.bool("DATABASE_CONN_HEALTH_CHECKS", default=True)
# With connections per request, a pool per process keeps them from being opened each time and bounds how many
# one process holds (hundreds of concurrent requests wait for one of these instead of exhausting PostgreSQL).
DATABASE_POOL_MAX_SIZE = env.int("DATABASE_POOL_MAX_SIZE", default=20)
if DATABASES["default"]["CONN_MAX_AGE"] == 0 and DATABASE_POOL_MAX_SIZE > 0:
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": DATABASE_POOL_MAX_SIZE,
        "timeout": env.float("DATABASE_POOL_TIMEOUT", default=30.0),
    }
# A dead database is reported within seconds (readiness, requests) rather than after the OS's TCP timeout.
DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", 5)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env("REDIS_URL", default="redis://127.0.0.1:63799/0")
# Prefix for keys this app writes to Redis directly (rate limits, crawl host slots).
REDIS_KEY_PREFIX = env("REDIS_KEY_PREFIX", default="")
CACHES = {
    "default": {
        "BACKEND": "config.redis_cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": REDIS_KEY_PREFIX,
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
MEDIA_ROOT = Path(env("MEDIA_ROOT", default=str(BASE_DIR / "media")))
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/app/"

# --- Accounts (django-allauth; sources/accounts.py): people sign up with an e-mail address and a password,
# confirm the address by a mailed link before they can sign in, and sign in with the address or a username
# (accounts made by operators have usernames). Accounts an operator made without any e-mail record are
# trusted as they are (sources.account_stages).
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
ACCOUNT_ADAPTER = "sources.accounts.AccountAdapter"
ACCOUNT_LOGIN_METHODS = {"email", "username"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_LOGOUT_REDIRECT_URL = "/accounts/login/"
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[Grounded] "
ACCOUNT_SIGNUP_OPEN = env.bool("ACCOUNT_SIGNUP_OPEN", default=True)
# An invitation to a workspace works this many days after it was sent.
INVITATION_EXPIRY_DAYS = env.int("INVITATION_EXPIRY_DAYS", default=7)

# --- Mail: confirmation links, password resets, invitations. Printed to the console in development (`make
# run` shows the links); production.py sends through the SMTP server configured here.
EMAIL_BACKEND = env("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default="Grounded <noreply@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
EMAIL_HOST = env("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=587)
EMAIL_HOST_USER = env("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=True)
EMAIL_USE_SSL = env.bool("EMAIL_USE_SSL", default=False)
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=10)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "sources.api.auth.ApiKeyAuthentication",
        "sources.api.auth.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    # One error shape for every 4xx/5xx: {"error": {"code", "message", "fields"?}} (sources/api/errors.py).
    "EXCEPTION_HANDLER": "sources.api.errors.exception_handler",
    # Per API key (or signed-in person), counted in Redis; the widget's public API has its own limits.
    "DEFAULT_THROTTLE_CLASSES": ["sources.api.throttling.ApiKeyRateThrottle"],
}
# The authenticated REST API's rate: requests per window per API key. API_RATE_LIMIT_RESOLVER may name a
# function (workspace) -> int | None that sets a workspace's own limit (its plan).
API_RATE_PER_MINUTE = env.int("API_RATE_PER_MINUTE", default=600)
API_RATE_WINDOW_SECONDS = env.int("API_RATE_WINDOW_SECONDS", default=60)
API_RATE_LIMIT_RESOLVER = env("API_RATE_LIMIT_RESOLVER", default="sources.plans.api_rate_limit")
# Plans and quotas (sources/plans.py, sources/quotas.py): a workspace without a plan is on this one (a data
# migration creates it with no limits; operators edit it in the Django admin).
GROUNDED_DEFAULT_PLAN = env("GROUNDED_DEFAULT_PLAN", default="default")
# An agent may embed with its model provider's /embeddings instead of the deployment's embedder
# (agents/embedding.py); retrieval and ingestion sit below agents, so they reach it through these two
# functions (retrieval/providers.py).
AGENT_EMBEDDER_RESOLVER = "agents.embedding.embedder_for_agent"
AGENT_EMBEDDING_MODELS_RESOLVER = "agents.embedding.agent_embedding_models"
# How long an Idempotency-Key's answer is kept for replays.
IDEMPOTENCY_TTL_SECONDS = env.int("IDEMPOTENCY_TTL_SECONDS", default=24 * 3600)

# --- Celery: three named queues (crawl, index, and interactive, which every worker consumes too: small
# sources' work, see ingestion/jobs/lanes.py); a task is acknowledged only once it has finished, so a worker
# that dies mid-task hands the message to another worker instead of losing it.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default=REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_QUEUES = [Queue("crawl"), Queue("index"), Queue("interactive")]
CELERY_TASK_DEFAULT_QUEUE = "index"
CELERY_TASK_ROUTES = {
    "ingestion.tasks.crawl_*": {"queue": "crawl"},
    "ingestion.tasks.index_*": {"queue": "index"},
    "integrations.tasks.sync_*": {"queue": "crawl"},
}
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=90)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=120)
# Redis hands an unacknowledged message to another worker after this long: a killed worker's tasks come
# back within minutes. Every countdown stays below 0.9x of it (ingestion.pages.max_countdown), since a
# message held longer is handed out twice; a task that runs longer (an upload's parse) claims its row, so
# a second delivery finds it taken. Kombu looks for such messages every interval x throttle seconds.
# See docs/RELIABILITY.md.
CELERY_VISIBILITY_TIMEOUT = env.int("CELERY_VISIBILITY_TIMEOUT", default=300)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    "unacked_restore_interval": 10,
    "unacked_restore_throttle": 3,
}
# Workers log through Django's LOGGING (JSON lines), not Celery's own root-logger format.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_BEAT_SCHEDULE = {
    "sweep-stalled-crawls": {
        "task": "ingestion.tasks.crawl_sweep_stalled",
        "schedule": env.float("SWEEP_INTERVAL", default=60.0),
    },
    # Freshness: start the sources whose scheduled sync is due (ingestion/freshness.py).
    "sync-due-sources": {"task": "ingestion.tasks.crawl_sync_due", "schedule": 60.0},
}

# --- Backends chosen by the deployment (see config/backends.py) ---
EMBEDDERS = {
    "default": {
        "BACKEND": env("EMBEDDER_BACKEND", default="retrieval.embedders.local.MiniLMOnnxEmbedder"),
        "OPTIONS": {
            "base_url": env("EMBEDDER_BASE_URL", default=""),
            "api_key": env("EMBEDDER_API_KEY", default=""),
            "model": env("EMBEDDER_MODEL", default=""),
            "dimensions": env.int("EMBEDDER_DIMENSIONS", default=384),
            # The built-in embedder's ONNX threads; 0 = the cores this process may use.
            "threads": env.int("EMBEDDER_THREADS", default=0),
            # Its ONNX threads spin-wait between operations instead of sleeping (docs/BENCHMARKS.md).
            "spinning": env.bool("EMBEDDER_SPINNING", default=False),
            # Batches it runs at once, each on threads / streams ONNX threads; 0 = one per thread.
            "streams": env.int("EMBEDDER_STREAMS", default=0),
        },
    }
}
_VECTOR_STORE_BACKEND = env("VECTOR_STORE_BACKEND", default="retrieval.stores.pgvector.PgVectorStore")
VECTOR_STORES = {
    "default": {
        "BACKEND": _VECTOR_STORE_BACKEND,
        "OPTIONS": (
            {
                "url": env("QDRANT_URL", default="http://127.0.0.1:6333"),
                "api_key": env("QDRANT_API_KEY", default=""),
                "collection": env("QDRANT_COLLECTION", default="grounded_chunks"),
                # Qdrant cluster mode: applied when the store creates its collection (unset: Qdrant's
                # defaults). An existing collection keeps its layout; see README "Running at scale".
                "shard_number": env.int("QDRANT_SHARD_NUMBER", default=None),
                "replication_factor": env.int("QDRANT_REPLICATION_FACTOR", default=None),
                "write_consistency_factor": env.int("QDRANT_WRITE_CONSISTENCY_FACTOR", default=None),
            }
            if _VECTOR_STORE_BACKEND.endswith("QdrantStore")
            else {
                "metric": env("PGVECTOR_METRIC", default="cosine"),
                # "auto": 100 below 500k chunks in the table, 200 above (the scale benchmark's recall).
                "ef_search": env("PGVECTOR_EF_SEARCH", default="auto"),
                "maintenance_work_mem": env("PGVECTOR_MAINTENANCE_WORK_MEM", default="1GB"),
            }
        ),
    }
}

# Rerankers are opt-in per search (SearchParams.rerank names an alias).
RERANKERS = {
    "http": {
        "BACKEND": "retrieval.rerankers.http.HttpReranker",
        "OPTIONS": {
            "base_url": env("RERANKER_BASE_URL", default=""),
            "api_key": env("RERANKER_API_KEY", default=""),
            "model": env("RERANKER_MODEL", default=""),
        },
    },
    "llm": {
        "BACKEND": "retrieval.rerankers.llm.LLMReranker",
        "OPTIONS": {
            "base_url": env("LLM_BASE_URL", default=""),
            "api_key": env("LLM_API_KEY", default=""),
            "model": env("LLM_MODEL", default=""),
        },
    },
}

# --- Search ---
# The default fusion and weights are what SciFact's train queries favoured (docs/BENCHMARKS.md).
# Min-max score fusion at 0.4 / 0.6 beat RRF (k=60, 1:1) on SciFact's train queries: 0.7358 vs 0.7184.
# Absolute fusion scored 0.7403 there but one answer fewer of 54 on the Flask docs questions
# (docs/BENCHMARKS.md, "Built-in answers"), so it stays a setting.
SEARCH_FUSION = env("SEARCH_FUSION", default="score")
SEARCH_VECTOR_WEIGHT = env.float("SEARCH_VECTOR_WEIGHT", default=0.4)
SEARCH_KEYWORD_WEIGHT = env.float("SEARCH_KEYWORD_WEIGHT", default=0.6)
EMBED_TITLE_PREFIX = env.bool("EMBED_TITLE_PREFIX", default=True)
# Sentence vectors (retrieval/sentences.py): ingestion also embeds each chunk's sentences, and a hybrid
# search rescores its best SEARCH_SENTENCE_CANDIDATES fused chunks by chunk cosine, best-sentence cosine
# and BM25 at these weights. SciFact train 0.7358 -> 0.7547 nDCG@10 and the Flask questions' citations
# 0.796 -> 0.889, for about twice the embedding work per page and a little more time per search
# (docs/BENCHMARKS.md, "Sentence vectors"). On by default: retrieval
# quality is what every answer is made of; false makes ingestion embed chunks only (and searches skip the
# rescoring). Chunks indexed before it was turned on are rescored by their chunk cosine until
# `manage.py reindex` gives them their sentences.
SENTENCE_VECTORS = env.bool("SENTENCE_VECTORS", default=True)
# A re-index keeps the vectors of text that did not change (a chunk's, its sentences') instead of embedding
# it again (ingestion/reuse.py). Off: every re-index embeds everything, as before (the re-sync bench's
# baseline).
REINDEX_REUSES_VECTORS = env.bool("REINDEX_REUSES_VECTORS", default=True)
SEARCH_SENTENCE_WEIGHTS = tuple(env.list("SEARCH_SENTENCE_WEIGHTS", cast=float, default=[0.2, 0.3, 0.5]))
SEARCH_SENTENCE_CANDIDATES = env.int("SEARCH_SENTENCE_CANDIDATES", default=20)
SEMANTIC_CACHE_THRESHOLD = env.float("SEMANTIC_CACHE_THRESHOLD", default=0.97)
SEMANTIC_CACHE_TTL = env.int("SEMANTIC_CACHE_TTL", default=300)
SEMANTIC_CACHE_MAX_ENTRIES = env.int("SEMANTIC_CACHE_MAX_ENTRIES", default=100)
# The search API's answers, per workspace and question, until the workspace's sources change (0: off).
SEARCH_CACHE_TTL = env.int("SEARCH_CACHE_TTL", default=300)
# Each web process keeps the API keys' rows it has read, forgotten on every change by a PostgreSQL
# notification (sources/key_rows.py): an API request then sends no query for its key.
API_KEY_CACHE = env.bool("API_KEY_CACHE", default=True)
API_KEY_CACHE_SECONDS = env.float("API_KEY_CACHE_SECONDS", default=60.0)
# A workspace of up to this many vectors is searched from a copy in each web process's memory (0: off);
# all copies of a process together stay under the byte budget (retrieval/resident.py). 20,000 vectors of
# 384 floats are ~31 MB.
SEARCH_RESIDENT_MAX_CHUNKS = env.int("SEARCH_RESIDENT_MAX_CHUNKS", default=20_000)
SEARCH_RESIDENT_MAX_BYTES = env.int("SEARCH_RESIDENT_MAX_BYTES", default=256 * 1024 * 1024)

# --- Crawling ---
# Private networks (10/8, 192.168/16, loopback...) are refused unless a deployment opts in.
CRAWL_ALLOW_PRIVATE_NETWORKS = env.bool("CRAWL_ALLOW_PRIVATE_NETWORKS", default=False)
# Or just some private networks, e.g. one intranet: ["10.1.2.0/24"]. Metadata addresses stay refused.
CRAWL_ALLOWED_NETWORKS = env.list("CRAWL_ALLOWED_NETWORKS", default=[])
CRAWL_MAX_PAGES_PER_SOURCE = env.int("CRAWL_MAX_PAGES_PER_SOURCE", default=500)
CRAWL_MAX_SOURCE_BYTES = env.int("CRAWL_MAX_SOURCE_BYTES", default=10 * 1024 * 1024)
CRAWL_FETCH_TIMEOUT = env.float("CRAWL_FETCH_TIMEOUT", default=60.0)
CRAWL_PAGE_TIME_LIMIT = env.int("CRAWL_PAGE_TIME_LIMIT", default=90)
CRAWL_STRATEGIES = tuple(env.list("CRAWL_STRATEGIES", default=["http", "browser"]))
CRAWL_RETRY_BACKOFF = [float(s) for s in env.list("CRAWL_RETRY_BACKOFF", default=["30", "90", "180"])]
CRAWL_RATE_LIMIT_WAIT = env.float("CRAWL_RATE_LIMIT_WAIT", default=60.0)
CRAWL_MAX_RETRY_AFTER = env.float("CRAWL_MAX_RETRY_AFTER", default=3600.0)
CRAWL_MAX_RATE_LIMIT_REQUEUES = env.int("CRAWL_MAX_RATE_LIMIT_REQUEUES", default=5)
CRAWL_PER_HOST_CONCURRENCY = env.int("CRAWL_PER_HOST_CONCURRENCY", default=2)
CRAWL_HOST_WAIT_SECONDS = env.float("CRAWL_HOST_WAIT_SECONDS", default=2.0)
CRAWL_MAX_HOST_WAITS = env.int("CRAWL_MAX_HOST_WAITS", default=300)
# Pages of one source in flight at once (crawling, queued, or waiting on a retry or a busy host); the rest
# wait in the source's backlog and are published as these finish (ingestion/jobs/backlog.py).
CRAWL_WAVE_SIZE = env.int("CRAWL_WAVE_SIZE", default=4)
# What the broker lost is judged after this long: a crawled page is put back in line while it has fewer
# than CRAWL_MAX_ATTEMPTS attempts, anything else fails with a reason (ingestion/jobs/sweeper.py).
CRAWL_STALLED_AFTER = env.int("CRAWL_STALLED_AFTER", default=1800)
CRAWL_MAX_ATTEMPTS = env.int("CRAWL_MAX_ATTEMPTS", default=5)
# A source with more pending documents than this is handed to the index queue, one job per batch
# (lifecycle.queue_index_jobs): reindexing a big site in one task would outlive the task's time limit.
INDEX_FAN_OUT_AT = env.int("INDEX_FAN_OUT_AT", default=20)
# Fair work across workspaces (ingestion/jobs/lanes.py): small sources' jobs (by the work they will index)
# go to the interactive queue ahead of big sources' jobs, which are published at a lower priority. A
# workspace's first INGESTION_INTERACTIVE_FIRST small sources in progress go first in line, the next ones
# behind every workspace's first few while its small work in progress is within
# INGESTION_INTERACTIVE_SHARE_PAGES pages.
INGESTION_LANES = env.bool("INGESTION_LANES", default=True)
INGESTION_INTERACTIVE_QUEUE = env("INGESTION_INTERACTIVE_QUEUE", default="interactive")
INGESTION_SMALL_SOURCE_PAGES = env.int("INGESTION_SMALL_SOURCE_PAGES", default=20)
INGESTION_INTERACTIVE_FIRST = env.int("INGESTION_INTERACTIVE_FIRST", default=3)
INGESTION_INTERACTIVE_SHARE_PAGES = env.int("INGESTION_INTERACTIVE_SHARE_PAGES", default=100)
# robots.txt Crawl-delay is honoured up to this many seconds between requests to one host.
CRAWL_MAX_CRAWL_DELAY = env.float("CRAWL_MAX_CRAWL_DELAY", default=30.0)
# The longest a page waits on a busy host before asking again (also bounded by the visibility timeout).
CRAWL_HOST_MAX_WAIT = env.float("CRAWL_HOST_MAX_WAIT", default=300.0)
# Freshness: scheduled syncs running at once per workspace, their spread (s), and the syncs in a row of
# evidence (404/410, or absence from a complete listing) before a page is removed.
SYNC_MAX_PER_WORKSPACE = env.int("SYNC_MAX_PER_WORKSPACE", default=3)
SYNC_JITTER_SECONDS = env.float("SYNC_JITTER_SECONDS", default=300.0)
SYNC_PRUNE_AFTER = env.int("SYNC_PRUNE_AFTER", default=2)
# The operators' stuck-work view lists what has been in flight longer than this (before the sweeper acts).
STUCK_AFTER = env.int("STUCK_AFTER", default=600)

# --- Outbound calls to URLs tenants configure (config/outbound.py): an agent's model URL, and any per-agent
# service URL. Unset address settings follow the crawler's policy; metadata addresses are always refused.
OUTBOUND_ALLOW_PRIVATE_NETWORKS = env.bool("OUTBOUND_ALLOW_PRIVATE_NETWORKS", default=None)
OUTBOUND_ALLOWED_NETWORKS = env.list("OUTBOUND_ALLOWED_NETWORKS", default=None)
OUTBOUND_CONNECT_TIMEOUT = env.float("OUTBOUND_CONNECT_TIMEOUT", default=10.0)
OUTBOUND_READ_TIMEOUT = env.float("OUTBOUND_READ_TIMEOUT", default=60.0)  # longest silence mid-answer
OUTBOUND_TOTAL_TIMEOUT = env.float("OUTBOUND_TOTAL_TIMEOUT", default=120.0)
OUTBOUND_MAX_RESPONSE_BYTES = env.int("OUTBOUND_MAX_RESPONSE_BYTES", default=10 * 1024 * 1024)

# --- Secrets at rest (config/secrets.py): Fernet keys, comma-separated, newest first. The first encrypts;
# every one decrypts, so a new key goes in front and `manage.py rotate_secrets` moves values onto it before
# the old key is dropped. Empty: a key derived from SECRET_KEY, which production refuses.
FIELD_ENCRYPTION_KEYS = env.list("FIELD_ENCRYPTION_KEYS", default=[])
FIELD_ENCRYPTION_DERIVED_KEY_ALLOWED = True

# --- Connectors (integrations/): the OAuth apps an operator registers (README, "Connecting Notion and
# Google"), and the providers' addresses (tests and self-hosted proxies point these elsewhere).
NOTION_CLIENT_ID = env("NOTION_CLIENT_ID", default="")
NOTION_CLIENT_SECRET = env("NOTION_CLIENT_SECRET", default="")
NOTION_API_BASE_URL = env("NOTION_API_BASE_URL", default="https://api.notion.com")
NOTION_VERSION = env("NOTION_VERSION", default="2022-06-28")
NOTION_REQUESTS_PER_SECOND = env.float("NOTION_REQUESTS_PER_SECOND", default=3.0)
GOOGLE_CLIENT_ID = env("GOOGLE_CLIENT_ID", default="")
GOOGLE_CLIENT_SECRET = env("GOOGLE_CLIENT_SECRET", default="")
GOOGLE_AUTH_URL = env("GOOGLE_AUTH_URL", default="https://accounts.google.com/o/oauth2/v2/auth")
GOOGLE_OAUTH_BASE_URL = env("GOOGLE_OAUTH_BASE_URL", default="https://oauth2.googleapis.com")
GOOGLE_API_BASE_URL = env("GOOGLE_API_BASE_URL", default="https://www.googleapis.com")
GOOGLE_REQUESTS_PER_SECOND = env.float("GOOGLE_REQUESTS_PER_SECOND", default=10.0)
# The public address of this server, for OAuth redirect URIs (…/app/integrations/<provider>/callback);
# empty: taken from the request.
PUBLIC_BASE_URL = env("PUBLIC_BASE_URL", default="")
INTEGRATIONS_TIMEOUT = env.float("INTEGRATIONS_TIMEOUT", default=20.0)
INTEGRATIONS_RETRY_BACKOFF = [
    float(s) for s in env.list("INTEGRATIONS_RETRY_BACKOFF", default=["30", "90", "180"])
]
INTEGRATIONS_MAX_RATE_LIMIT_REQUEUES = env.int("INTEGRATIONS_MAX_RATE_LIMIT_REQUEUES", default=20)
INTEGRATIONS_MAX_RETRY_AFTER = env.float("INTEGRATIONS_MAX_RETRY_AFTER", default=600.0)

# --- Uploads ---
UPLOAD_MAX_FILE_BYTES = env.int("UPLOAD_MAX_FILE_BYTES", default=25 * 1024 * 1024)
UPLOAD_MAX_FILES_PER_REQUEST = env.int("UPLOAD_MAX_FILES_PER_REQUEST", default=20)
UPLOAD_MAX_WORKSPACE_BYTES = env.int("UPLOAD_MAX_WORKSPACE_BYTES", default=1024 * 1024 * 1024)
UPLOAD_PARSE_TIMEOUT = env.float("UPLOAD_PARSE_TIMEOUT", default=300.0)
UPLOAD_PARSE_MEMORY_MB = env.int("UPLOAD_PARSE_MEMORY_MB", default=2048)
UPLOAD_TASK_TIME_LIMIT = env.int("UPLOAD_TASK_TIME_LIMIT", default=900)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024  # larger files go to a temporary file, not memory
# S3-compatible storage when a bucket is configured; the local MEDIA_ROOT otherwise.
STORAGES: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
if env("S3_BUCKET", default=""):
    STORAGES = {
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": env("S3_BUCKET"),
                "endpoint_url": env("S3_ENDPOINT_URL", default=None),
                "access_key": env("S3_ACCESS_KEY", default=None),
                "secret_key": env("S3_SECRET_KEY", default=None),
                "region_name": env("S3_REGION", default=None),
                "default_acl": "private",
                "file_overwrite": True,
            },
        },
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }

# --- Ingestion limits ---
EMBED_BATCH_SIZE = env.int("EMBED_BATCH_SIZE", default=100)
CHUNK_TARGET_CHARS = env.int("CHUNK_TARGET_CHARS", default=2000)
CHUNK_OVERLAP_CHARS = env.int("CHUNK_OVERLAP_CHARS", default=200)
TEXT_SOURCE_MAX_CHARS = env.int("TEXT_SOURCE_MAX_CHARS", default=1_000_000)
# The documents API (ingestion/push/): documents per batch call, and the largest request body it reads.
PUSH_BATCH_MAX_DOCUMENTS = env.int("PUSH_BATCH_MAX_DOCUMENTS", default=200)
PUSH_MAX_REQUEST_BYTES = env.int("PUSH_MAX_REQUEST_BYTES", default=32 * 1024 * 1024)
# Request bodies: each API endpoint's limit is config/body_limits.py's (413 beyond it); this is any other's.
API_MAX_REQUEST_BYTES = 2_621_440
# Django refuses to read a body larger than this into memory (RequestDataTooBig, answered 413). It is the
# largest the API's limits allow, so that they decide: a documents API request, or pasted text at 12 bytes a
# character (body_limits.BYTES_PER_CHAR) and 1 MB for the rest; the web UI's forms get the same room.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(
    PUSH_MAX_REQUEST_BYTES, TEXT_SOURCE_MAX_CHARS * 12 + 1024 * 1024, API_MAX_REQUEST_BYTES
)
SEARCH_MAX_TOP_K = 50
# How often the sources page asks for its rows while something is in progress.
SOURCES_PAGE_POLL_MS = 2000

# --- Operations: logs, metrics, errors (config/logging.py, config/metrics.py, config/health.py) ---
# JSON lines by default (one object per line, with request_id); LOG_FORMAT=console for people at a terminal.
LOG_FORMAT = env("LOG_FORMAT", default="json")
LOG_LEVEL = env("LOG_LEVEL", default="INFO")
LOGGING = logging_config(LOG_FORMAT, LOG_LEVEL)
DJANGO_STRUCTLOG_CELERY_ENABLED = True
# One line per request at INFO, when it finishes (with its status), as an access log has; the line at its
# start is DEBUG (LOG_LEVEL=DEBUG shows it). A second line at INFO was a visible share of a
# cached search (docs/BENCHMARKS.md).
DJANGO_STRUCTLOG_STATUS_START_LOG_LEVEL = logging.DEBUG
# Take the request id from the proxy's X-Request-ID header (only behind a proxy that sets it: a client could
# otherwise choose the id its requests are logged under). A new UUID per request when off.
DJANGO_STRUCTLOG_TRUST_UPSTREAM_REQUEST_ID = env.bool("LOG_TRUST_REQUEST_ID_HEADER", default=False)
# `/metrics` answers only with `Authorization: Bearer METRICS_TOKEN`; unset, it is off (404).
METRICS_TOKEN = env("METRICS_TOKEN", default="")
# A worker on another machine than the web serves its metrics on this port (0: off; see README).
WORKER_METRICS_PORT = env.int("WORKER_METRICS_PORT", default=0)
# Threads per web process that advance chat streams one event at a time (config/streaming.py): streams
# beyond this many wait their turn on the event loop without a thread.
STREAM_THREADS = env.int("STREAM_THREADS", default=16)
SENTRY_DSN = env("SENTRY_DSN", default="")
SENTRY_ENVIRONMENT = env("SENTRY_ENVIRONMENT", default="production")
SENTRY_TRACES_SAMPLE_RATE = env.float("SENTRY_TRACES_SAMPLE_RATE", default=0.0)
init_sentry(SENTRY_DSN, environment=SENTRY_ENVIRONMENT, traces_sample_rate=SENTRY_TRACES_SAMPLE_RATE)

SPECTACULAR_SETTINGS = {
    "TITLE": "Grounded API",
    "DESCRIPTION": "Sources, search and agents for a workspace's knowledge.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "ENUM_NAME_OVERRIDES": {"ScheduleEnum": "sources.models.Schedule", "StatusEnum": "sources.models.Status"},
    # The widget's citation and the admin's source are different things with different names.
    "COMPONENT_SPLIT_REQUEST": True,
}

# --- The widget's public API ---
WIDGET_RATE_PER_KEY = env.int("WIDGET_RATE_PER_KEY", default=600)  # requests per minute per agent
WIDGET_RATE_PER_ADDRESS = env.int("WIDGET_RATE_PER_ADDRESS", default=30)  # per client address
WIDGET_MAX_REQUEST_BYTES = env.int("WIDGET_MAX_REQUEST_BYTES", default=16_384)
WIDGET_MAX_MESSAGE_CHARS = env.int("WIDGET_MAX_MESSAGE_CHARS", default=4_000)
TRUSTED_PROXY_HEADER = env("TRUSTED_PROXY_HEADER", default="")
# After "rotate", tokens signed with the old visitor secret stay valid this long.
VISITOR_SECRET_GRACE_SECONDS = env.int("VISITOR_SECRET_GRACE_SECONDS", default=24 * 3600)
AUTO_SOURCES_PER_HOUR = env.int("AUTO_SOURCES_PER_HOUR", default=20)  # per agent
