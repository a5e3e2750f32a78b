"""The vector store interface. Every method takes workspace_id as a required keyword: a store cannot
be asked a question that is not scoped to one workspace."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class VectorStoreError(RuntimeError):
    """The store is unreachable or refused the operation."""


@dataclass(frozen=True)
class VectorRecord:
    chunk_id: str
    vector: np.ndarray
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VectorHit:
    chunk_id: str
    #: Cosine similarity in [-1, 1]; higher is closer.
    score: float


class VectorStore(ABC):
    @abstractmethod
    def upsert(self, *, workspace_id: int, records: list[VectorRecord], model_name: str) -> None: ...

    @abstractmethod
    def search(
        self,
        *,
        workspace_id: int,
        vector: np.ndarray,
        top_k: int,
        min_score: float | None = None,
        model_name: str,
    ) -> list[VectorHit]: ...

    @abstractmethod
    def delete(self, *, workspace_id: int, chunk_ids: list[str]) -> None: ...
