"""The test suite: the same real services as development, with fast password hashing."""

from .base import *  # noqa: F403
from .base import env

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests use their own Redis databases, so they never see a running dev server's queues or cache, and
# clearing the cache between tests cannot drop the broker's queue bindings.
_redis_server = env("REDIS_URL", default="redis://127.0.0.1:63799/0").rsplit("/", 1)[0]
REDIS_URL = f"{_redis_server}/15"
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
CELERY_BROKER_URL = f"{_redis_server}/14"
# collectstatic is not part of the test run; whitenoise would warn about the missing directory.
WHITENOISE_AUTOREFRESH = True
