"""The AAEP schema validator, where the tests have always imported it from.

The validator itself lives in the protocol layer (:mod:`jupyter_aaep.aaep.schema_validation`),
beside the schemas it reads, so ``aaep-check`` can use it without importing test support.
"""

from __future__ import annotations

from ..aaep.schema_validation import (
    PROFILES,
    SHIPPED_SCHEMA_DIR,
    SchemaValidator,
    SchemaViolation,
    default_validator,
    find_schema_dir,
    spec_findings,
    validate_event,
)

__all__ = [
    "PROFILES",
    "SHIPPED_SCHEMA_DIR",
    "SchemaValidator",
    "SchemaViolation",
    "default_validator",
    "find_schema_dir",
    "spec_findings",
    "validate_event",
]
