"""One loader for every pluggable backend, in the shape of Django's STORAGES setting:

    VECTOR_STORES = {"default": {"BACKEND": "retrieval.stores.pgvector.PgVectorStore", "OPTIONS": {...}}}

Each alias is built once per process, on first use, and cached.
"""

from __future__ import annotations

import threading
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

T = TypeVar("T")


class BackendHandler(Generic[T]):
    def __init__(self, setting_name: str) -> None:
        self.setting_name = setting_name
        self._instances: dict[str, T] = {}
        self._lock = threading.Lock()
        setting_changed.connect(self._on_setting_changed)

    def _on_setting_changed(self, *, setting: str, **kwargs: Any) -> None:
        if setting == self.setting_name:
            self.reset()

    def reset(self) -> None:
        with self._lock:
            self._instances.clear()

    def __getitem__(self, alias: str) -> T:
        instance = self._instances.get(alias)
        if instance is not None:
            return instance
        with self._lock:
            if alias not in self._instances:
                self._instances[alias] = self._create(alias)
            return self._instances[alias]

    def _create(self, alias: str) -> T:
        configured = getattr(settings, self.setting_name, {})
        entry = configured.get(alias)
        if entry is None:
            raise ImproperlyConfigured(f"{self.setting_name}[{alias!r}] is not configured.")
        path = entry.get("BACKEND")
        if not path:
            raise ImproperlyConfigured(f"{self.setting_name}[{alias!r}] has no BACKEND.")
        try:
            backend_class = import_string(path)
        except ImportError as exc:
            raise ImproperlyConfigured(
                f"{self.setting_name}[{alias!r}]: cannot import {path!r}: {exc}"
            ) from exc
        try:
            return backend_class(**entry.get("OPTIONS", {}))
        except TypeError as exc:
            raise ImproperlyConfigured(
                f"{self.setting_name}[{alias!r}]: bad OPTIONS for {path}: {exc}"
            ) from exc


embedders: BackendHandler[Any] = BackendHandler("EMBEDDERS")
vector_stores: BackendHandler[Any] = BackendHandler("VECTOR_STORES")
rerankers: BackendHandler[Any] = BackendHandler("RERANKERS")
