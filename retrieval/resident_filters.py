"""Metadata filters over a copy's rows (retrieval/resident.py), so a filtered search (an agent's, an
audience's) can be searched in memory too.

Each filter key maps its values to the rows holding them, built once with the copy. A filter becomes a
boolean mask of rows with base.matches_filters' semantics, which every store implements: a field matches
when it is, or is a list holding, one of the accepted values; a missing field matches nothing; an empty
list of accepted values matches nothing; booleans only match booleans (Python's True == 1 does not hold
in JSON or in the stores). Masks are kept per filter for the copy's life, which ends with its generation.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from retrieval.stores.base import Filters, validate_filters

#: masks remembered per copy (one per distinct filter asked: an agent, an audience ...)
MASKS_KEPT = 64


def _value_key(value: Any) -> tuple[bool, Any] | None:
    """A hashable key under which equal values (by _same) meet: 1 and 1.0 do, True and 1 do not."""
    if isinstance(value, bool):
        return (True, value)
    if isinstance(value, str | int | float):
        return (False, value)
    return None  # null, objects and nested lists never equal an accepted (scalar) value


@dataclass(frozen=True)
class FilterIndex:
    rows: int
    #: key -> value key -> the rows whose metadata holds it, ascending
    values: dict[str, dict[tuple[bool, Any], np.ndarray]]
    _masks: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, metadata: list[dict[str, Any]]) -> FilterIndex:
        found: dict[str, dict[tuple[bool, Any], list[int]]] = defaultdict(lambda: defaultdict(list))
        for row, fields in enumerate(metadata):
            for key, present in fields.items():
                for value in present if isinstance(present, list) else [present]:
                    value_key = _value_key(value)
                    if value_key is None:
                        continue
                    rows = found[key][value_key]
                    if not rows or rows[-1] != row:  # a value listed twice is one match
                        rows.append(row)
        values = {
            key: {v: np.asarray(rows, dtype=np.int32) for v, rows in by_value.items()}
            for key, by_value in found.items()
        }
        return cls(len(metadata), values)

    @property
    def nbytes(self) -> int:
        return sum(rows.nbytes + 80 for by_value in self.values.values() for rows in by_value.values())

    def mask(self, filters: Filters | None) -> np.ndarray | None:
        """The rows passing the filters (None: no filter, every row passes)."""
        accepted = validate_filters(filters)
        if not accepted:
            return None
        name = json.dumps(accepted, sort_keys=True)
        kept = self._masks.get(name)
        if kept is not None:
            return kept
        passing = np.ones(self.rows, dtype=bool)
        for key, values in accepted.items():
            matching = np.zeros(self.rows, dtype=bool)
            by_value = self.values.get(key, {})
            for value in values:
                value_key = _value_key(value)  # None: a value no row can hold
                rows = by_value.get(value_key) if value_key is not None else None
                if rows is not None:
                    matching[rows] = True
            passing &= matching
        if len(self._masks) >= MASKS_KEPT:
            self._masks.clear()
        self._masks[name] = passing
        return passing
