"""Deployment (docker-compose.yml). Secrets must come from the environment; nothing defaults."""

from .base import *  # noqa: F403
from .base import env

DEBUG = False
SECRET_KEY = env("DJANGO_SECRET_KEY")
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
STORAGES = {
    **STORAGES,  # noqa: F405 - the default storage chosen in base (S3 when configured)
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
# Required: a key derived from SECRET_KEY would tie the secrets at rest to the one key that signs sessions.
FIELD_ENCRYPTION_KEYS = env.list("FIELD_ENCRYPTION_KEYS")
FIELD_ENCRYPTION_DERIVED_KEY_ALLOWED = False
