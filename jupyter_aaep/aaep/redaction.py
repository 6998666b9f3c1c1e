"""Keeping secrets out of everything a subscriber hears or logs (AAEP §10).

Two rules. Arguments whose *name* looks like a secret are dropped entirely — even their
name is not repeated, only how many were hidden. Values that *look* like keys or tokens are
masked wherever they appear. The mask text itself avoids the substrings that secret scanners
flag ("api_key", "sk-", "bearer "…), so a redacted summary never trips a scanner.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MASK = "[hidden]"

_SECRET_NAME = re.compile(
    r"(pass(word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|credential|auth|cookie|session[_-]?key|signature|bearer|x-api-key)",
    re.IGNORECASE,
)

_SECRET_VALUES = [
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", re.DOTALL),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{4,}"),
    re.compile(r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{8,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{8,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{8,}"),
    re.compile(r"\b(AKIA|ASIA)[A-Z0-9]{12,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\bssh-(rsa|ed25519|dss)\s+[A-Za-z0-9+/=]{16,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-~+/=]{8,}"),
    re.compile(r"(?i)\bauthorization\s*:\s*\S+(\s+\S+)?"),
]

# ``name=value`` / ``name: value`` pairs whose name looks like a secret.
_SECRET_PAIR = re.compile(
    r"""(?ix)
    \b[\w.-]*(pass(word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key
      |private[_-]?key|credential|auth|cookie|signature)[\w.-]*
    \s*[:=]\s*
    ("[^"]*"|'[^']*'|[^\s,;&]+)
    """
)

# Long high-entropy runs (hex or base64-ish, 32+ chars, letters and digits mixed).
_OPAQUE = re.compile(r"\b(?=[A-Za-z0-9_\-+/]*\d)(?=[A-Za-z0-9_\-+/]*[A-Za-z])[A-Za-z0-9_\-+/]{32,}={0,2}")


def is_secret_name(name: str) -> bool:
    """Whether an argument or field called *name* should never be shown."""
    return bool(_SECRET_NAME.search(name))


def mask_secrets(text: str) -> str:
    """*text* with secret-looking values and ``secret_name=value`` pairs replaced by a mask."""
    if not text:
        return text
    masked = _SECRET_PAIR.sub(MASK, text)
    for pattern in _SECRET_VALUES:
        masked = pattern.sub(MASK, masked)
    masked = _OPAQUE.sub(_mask_opaque, masked)
    return masked


def _mask_opaque(match: re.Match[str]) -> str:
    value = match.group(0)
    # Paths and identifiers with separators are common in notebooks; only mask dense runs.
    if value.count("/") > 1 or value.count("_") > 3 or value.count("-") > 3:
        return value
    return MASK


@dataclass(frozen=True)
class RedactedArguments:
    """Arguments safe to show: secret-named ones removed, secret-looking values masked."""

    shown: dict[str, Any]
    hidden_count: int

    def summary(self, *, max_length: int = 400) -> str:
        """A one-line, human-readable rendering such as ``url: https://…; 1 hidden``."""
        parts = [f"{name}: {_short_value(value)}" for name, value in self.shown.items()]
        if self.hidden_count:
            noun = "argument" if self.hidden_count == 1 else "arguments"
            parts.append(f"{self.hidden_count} sensitive {noun} hidden")
        text = "; ".join(parts) if parts else "no arguments"
        return text if len(text) <= max_length else text[: max_length - 1] + "…"


def redact_arguments(arguments: Mapping[str, Any]) -> RedactedArguments:
    shown: dict[str, Any] = {}
    hidden = 0
    for name, value in arguments.items():
        if is_secret_name(str(name)):
            hidden += 1
            continue
        shown[str(name)] = _redact_value(value)
    return RedactedArguments(shown=shown, hidden_count=hidden)


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, Mapping):
        return {k: _redact_value(v) for k, v in value.items() if not is_secret_name(str(k))}
    if isinstance(value, (list, tuple)):
        return [_redact_value(v) for v in value]
    return value


def _short_value(value: Any, limit: int = 80) -> str:
    if isinstance(value, str):
        text = value.replace("\n", " ")
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
