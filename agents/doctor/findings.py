"""What the doctor reports: findings, each with a severity, what is wrong and what to do."""

from __future__ import annotations

from dataclasses import asdict, dataclass

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITY_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}


@dataclass(frozen=True)
class Finding:
    check: str
    severity: str
    problem: str
    action: str
    detail: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)
