"""Keeping secrets out of everything a subscriber hears or logs (AAEP §10).

Two rules. Arguments whose *name* looks like a secret are dropped entirely — even their
name is not repeated, only how many were hidden. Values that *look* like keys or tokens are
masked wherever they appear. The mask text itself avoids the substrings that secret scanners
flag ("api_key", "sk-", "bearer "…), so a redacted summary never trips a scanner.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..words import plural
from .known_secrets import known_secrets as _known_secrets  # remember_secret fills it

MASK = "[hidden]"

_SECRET_NAME = re.compile(
    r"(pass(word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|credential|auth|cookie|session[_-]?key|signature|bearer|x-api-key)",
    re.IGNORECASE,
)

# What a pattern cannot match without: lower-case literals, one of which every match holds.
# Scanning a 25 KB cell listing with every pattern costs about 13 ms; checking the literals
# first skips the patterns that cannot match (most of them, in most notebooks) in microseconds.
_NEEDS: dict[re.Pattern[str], tuple[str, ...]] = {}


def _needing(pattern: str, *literals: str, flags: int = 0) -> re.Pattern[str]:
    """*pattern* compiled, with the literals one of which each of its matches holds."""
    if not literals:  # a pattern needing nothing would never be scanned for
        raise ValueError("name at least one literal every match holds")
    compiled = re.compile(pattern, flags)
    _NEEDS[compiled] = literals
    return compiled


_SECRET_VALUES = [
    _needing(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)",
        "-----begin",
        flags=re.DOTALL,
    ),
    _needing(r"\bsk-[A-Za-z0-9_\-]{4,}", "sk-"),
    _needing(r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{8,}", "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    _needing(r"\bgithub_pat_[A-Za-z0-9_]{8,}", "github_pat_"),
    _needing(r"\bxox[abprs]-[A-Za-z0-9-]{8,}", "xox"),
    _needing(r"\b(AKIA|ASIA)[A-Z0-9]{12,}", "akia", "asia"),
    _needing(r"\bAIza[0-9A-Za-z_\-]{20,}", "aiza"),
    _needing(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", "eyj"),
    _needing(r"\bssh-(rsa|ed25519|dss)\s+[A-Za-z0-9+/=]{16,}", "ssh-"),
    _needing(r"(?i)\bbearer\s+[A-Za-z0-9._\-~+/=]{8,}", "bearer"),
    _needing(r"(?i)\bauthorization\s*:\s*\S+(\s+\S+)?", "authorization"),
    # Hugging Face tokens: random letters of both cases (snake_case names such as
    # ``hf_hub_download`` have neither the length nor the capitals).
    _needing(r"\bhf_(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[a-z])[A-Za-z0-9]{30,}", "hf_"),
    # Stripe secret and restricted keys, live and test (publishable ``pk_`` keys are public).
    _needing(
        r"\b[rs]k_(live|test)_[A-Za-z0-9]{8,}", "sk_live_", "rk_live_", "sk_test_", "rk_test_"
    ),
]

# A 40-character AWS secret access key has no prefix of its own: it is recognised next to an
# AWS name (``aws_secret_access_key``, ``SecretAccessKey``) or an access key id (AKIA/ASIA…)
# at most 80 characters before it, as credentials files, CSV exports and printed dicts show it.
_AWS_SECRET = _needing(
    r"""(?x)
    (?:(?i:aws_secret_access_key|aws_secret_key|secret_?access_?key)|\b(?:AKIA|ASIA)[A-Z0-9]{12,})
    .{0,80}?
    (?<![A-Za-z0-9/+])(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])
    """,
    "secret_access_key",
    "secretaccesskey",
    "aws_secret_key",
    "akia",
    "asia",
    flags=re.DOTALL,
)

# ``name=value`` / ``name: value`` pairs whose name looks like a secret.
_SECRET_PAIR = _needing(
    r"""(?ix)
    \b[\w.-]*(pass(word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key
      |private[_-]?key|credential|auth|cookie|signature)[\w.-]*["']?
    \s*[:=]\s*
    ("[^"]*"|'[^']*'|[^\s,;&]+)
    """,
    "pass",
    "pwd",
    "secret",
    "token",
    "api",
    "access",
    "private",
    "credential",
    "auth",
    "cookie",
    "signature",
)

# The same with a quoted name, as a printed dict or JSON shows it (``{'AWS_SECRET_ACCESS_KEY': …}``):
# listeners get ``'[hidden]': '[hidden]'``, the quotes kept so JSON stays JSON.
_QUOTED_PAIR = _needing(
    r"""(?ix)
    (?P<q>["'])[\w.-]*(pass(word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key
      |private[_-]?key|credential|auth|cookie|signature)[\w.-]*(?P=q)
    \s*:\s*
    (?P<value>"[^"\n]*"|'[^'\n]*'|[^\s,;&}\]]+)
    """,
    *_NEEDS[_SECRET_PAIR],
)


def _hide_quoted_pair(match: re.Match[str]) -> str:
    quote, value = match.group("q"), match.group("value")
    shown = f"{value[0]}{MASK}{value[0]}" if value[:1] in ("'", '"') else MASK
    return f"{quote}{MASK}{quote}: {shown}"


# Long high-entropy runs (hex or base64-ish, 32+ chars, letters and digits mixed).
_OPAQUE = re.compile(
    r"\b(?=[A-Za-z0-9_\-+/]*\d)(?=[A-Za-z0-9_\-+/]*[A-Za-z])[A-Za-z0-9_\-+/]{32,}={0,2}"
)


# For what the model reads (cell sources and outputs), names that are only *weakly* secret
# (``max_tokens = 100``, ``auth_mode = "basic"``) keep their values unless the value itself
# looks like a credential; strongly secret names always lose a literal value.
_STRONG_PAIR = _needing(
    r"""(?ix)
    \b[\w.-]*(pass(word|wd|phrase)?|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key
      |credential)[\w.-]*["']?
    \s*[:=]\s*
    (?P<value>"[^"\n]*"|'[^'\n]*'|(?![\w.]*[.(\[])[^\s,;&()\[\]{}]+)
    """,
    "pass",
    "secret",
    "api",
    "access",
    "private",
    "credential",
)
_WEAK_PAIR = _needing(
    r"""(?ix)
    \b[\w.-]*(token|auth|cookie|signature|session[_-]?key)[\w.-]*["']?
    \s*[:=]\s*
    (?P<value>(?P<q>["']?)(?=[A-Za-z0-9_\-+/.=]*\d)[A-Za-z0-9_\-+/.=]{16,}(?P=q))
    """,
    "token",
    "auth",
    "cookie",
    "signature",
    "session",
)
# ``scheme://user:password@host``: the password of a connection URL (postgresql://admin:…@db).
_URL_PASSWORD = _needing(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@'\"]*:(?P<value>[^\s@/'\"]+)@", "://")

# The only characters a case-insensitive ASCII letter also matches (Python's ``re``):
# dotted and dotless i, the Kelvin sign and the long s.
_ALSO_ASCII = str.maketrans({"\u0130": "i", "\u0131": "i", "\u212a": "k", "\u017f": "s"})


def _worth_scanning(text: str) -> Callable[[re.Pattern[str]], bool]:
    """Which patterns could match *text*: those whose literal it holds, in lower case."""
    odd = not text.isascii() and any(c in text for c in "\u0130\u0131\u212a\u017f")
    lowered = (text.translate(_ALSO_ASCII) if odd else text).lower()
    return lambda pattern: any(needed in lowered for needed in _NEEDS.get(pattern, ("",)))


def _known_spans(text: str) -> Iterable[tuple[int, int]]:
    for value in _known_secrets:
        start = text.find(value)
        while start != -1:
            yield start, start + len(value)
            start = text.find(value, start + len(value))


def _model_spans(text: str) -> list[tuple[int, int]]:
    """The non-overlapping spans of *text* that the model must not read, in order."""
    spans: list[tuple[int, int]] = list(_known_spans(text))
    worth = _worth_scanning(text)
    for pattern in filter(worth, _SECRET_VALUES):
        spans += [m.span() for m in pattern.finditer(text)]
    for pair in filter(worth, (_STRONG_PAIR, _WEAK_PAIR, _URL_PASSWORD, _AWS_SECRET)):
        spans += [m.span("value") for m in pair.finditer(text)]
    chosen: list[tuple[int, int]] = []
    for start, end in sorted(spans, key=lambda span: (span[0], -span[1])):
        if chosen and start < chosen[-1][1]:
            chosen[-1] = (chosen[-1][0], max(end, chosen[-1][1]))
        else:
            chosen.append((start, end))
    return chosen


def mask_for_model(text: str) -> tuple[str, list[str]]:
    """*text* as the model may read it, and the hidden values in the order they were masked.

    Narrower than :func:`mask_secrets`: only credential-shaped values, literal values of
    secret-named variables and the server's own remembered secrets are hidden, so hashes,
    ids and ``max_tokens = 100`` stay readable and the model can still work on the code.
    """
    if not text:
        return text, []
    parts, hidden, last = [], [], 0
    for start, end in _model_spans(text):
        parts += [text[last:start], MASK]
        hidden.append(text[start:end])
        last = end
    parts.append(text[last:])
    return "".join(parts), hidden


def restore_masked(new: str, original: str) -> str:
    """*new* with each mask put back to what it stood for in *original*, in order.

    The model edits cells it read through :func:`mask_for_model`; writing its text back as is
    would replace the user's key with the mask. A mask the original already held literally
    stays a mask. Raises ``ValueError`` when the masks in *new* cannot be matched one to one.
    """
    count = new.count(MASK)
    if not count:
        return new
    stood_for: list[tuple[int, str]] = [
        (start, original[start:end]) for start, end in _model_spans(original)
    ]
    inside = [(start, start + len(value)) for start, value in stood_for]
    literal = original.find(MASK)
    while literal != -1:
        if not any(a <= literal < b for a, b in inside):
            stood_for.append((literal, MASK))
        literal = original.find(MASK, literal + len(MASK))
    values = [value for _, value in sorted(stood_for)]
    if count != len(values):
        raise ValueError(
            f"The new text has {count} {MASK} placeholder(s) where the cell had {len(values)} hidden "
            "value(s), so the secrets cannot be put back."
        )
    pieces = new.split(MASK)
    return pieces[0] + "".join(value + piece for value, piece in zip(values, pieces[1:]))


def is_secret_name(name: str) -> bool:
    """Whether an argument or field called *name* should never be shown."""
    return bool(_SECRET_NAME.search(name))


def mask_secrets(text: str) -> str:
    """*text* with secret-looking values and ``secret_name=value`` pairs replaced by a mask."""
    if not text:
        return text
    masked = text
    for value in _known_secrets:
        masked = masked.replace(value, MASK)
    worth = _worth_scanning(masked)  # masks only take text away: what could not match still cannot
    if worth(_URL_PASSWORD):
        masked = _URL_PASSWORD.sub(
            lambda m: m.group(0)[: m.start("value") - m.start()] + MASK + "@", masked
        )
    if worth(_AWS_SECRET):
        masked = _AWS_SECRET.sub(
            lambda m: m.group(0)[: m.start("value") - m.start()] + MASK, masked
        )
    if worth(_QUOTED_PAIR):
        masked = _QUOTED_PAIR.sub(_hide_quoted_pair, masked)
    if worth(_SECRET_PAIR):
        masked = _SECRET_PAIR.sub(MASK, masked)
    for pattern in filter(worth, _SECRET_VALUES):
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
            parts.append(f"{plural(self.hidden_count, 'sensitive argument')} hidden")
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
