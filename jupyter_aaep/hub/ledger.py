"""Per-user model usage and spending limits, for the model gateway (``hub/gateway.py``).

Why a ledger of its own: the gateway is the only place that sees every user's requests with
the organisation's key, so it is where a limit can be enforced. The counts come from the
``usage`` the Messages API reports in each answer (``message_start`` and ``message_delta`` of a
stream, or the Message of a plain answer): uncached input, cache writes, cache reads and output.
Cost is estimated with the agent's price table (:class:`~jupyter_aaep.agent.usage.PriceTable`).

A request is let through while the user is below their limit, so one request can go past it
(its size is only known from its answer); the next one is refused with a sentence that says
what was used and who can raise it. The ledger is saved as JSON (mode 0600, replaced
atomically) after each change, so limits and usage survive a restart of the service.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..agent.usage import Price, PriceTable

__all__ = ["Account", "Ledger", "count_tokens"]

_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def count_tokens(usage: dict[str, Any]) -> dict[str, int]:
    """The four token counts of a ``usage`` object (missing or null ones are 0)."""
    return {name: int(usage.get(name) or 0) for name in _COUNTS}


@dataclass
class Account:
    """One user's usage so far and their own limits (``None``: the gateway's default applies)."""

    tokens: int = 0
    cost_usd: float = 0.0
    requests: int = 0
    refused: int = 0
    limit_tokens: int | None = None
    limit_usd: float | None = None


class Ledger:
    """Parameters
    ----------
    path
        Where the ledger is kept (JSON); ``None`` keeps it in memory only.
    limit_tokens, limit_usd
        Default limits per user (``None``: no limit of that kind).
    prices
        For the cost estimate.
    """

    def __init__(
        self,
        path: Path | None,
        *,
        limit_tokens: int | None = None,
        limit_usd: float | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        self.path = path
        self.limit_tokens = limit_tokens
        self.limit_usd = limit_usd
        self.prices = prices or PriceTable()
        self._lock = threading.Lock()
        self.accounts: dict[str, Account] = {}
        if path is not None and path.exists():
            for name, values in (
                json.loads(path.read_text(encoding="utf-8")).get("users", {}).items()
            ):
                self.accounts[name] = Account(**values)

    def account(self, user: str) -> Account:
        return self.accounts.setdefault(user, Account())

    def limits(self, user: str) -> tuple[int | None, float | None]:
        account = self.account(user)
        tokens = account.limit_tokens if account.limit_tokens is not None else self.limit_tokens
        usd = account.limit_usd if account.limit_usd is not None else self.limit_usd
        return tokens, usd

    def refusal(self, user: str) -> str | None:
        """The sentence a user over their limit gets, or ``None`` when they may go on."""
        account = self.account(user)
        tokens, usd = self.limits(user)
        if tokens is not None and account.tokens >= tokens:
            used = f"{account.tokens:,} of your {tokens:,} tokens"
        elif usd is not None and account.cost_usd >= usd:
            used = f"an estimated ${account.cost_usd:,.2f} of your ${usd:,.2f}"
        else:
            return None
        with self._lock:
            account.refused += 1
        self._save()
        return (
            f"You have reached your model budget on this JupyterHub: you used {used}. "
            "Ask your JupyterHub administrator to raise it; your notebooks and chats are kept."
        )

    def record(self, user: str, model: str, usage: dict[str, Any]) -> None:
        """Add one answer's usage to *user*'s account."""
        counts = count_tokens(usage)
        price = self._price(model)
        cost = (
            counts["input_tokens"] * price.input
            + counts["output_tokens"] * price.output
            + counts["cache_creation_input_tokens"] * price.write
            + counts["cache_read_input_tokens"] * price.read
        ) / 1_000_000
        with self._lock:
            account = self.account(user)
            account.tokens += sum(counts.values())
            account.cost_usd += cost
            account.requests += 1
        self._save()

    def set_limits(self, user: str, *, tokens: int | None, usd: float | None) -> Account:
        with self._lock:
            account = self.account(user)
            account.limit_tokens = tokens
            account.limit_usd = usd
        self._save()
        return account

    def report(self, user: str | None = None) -> dict[str, Any]:
        """What an admin reads: every user (or one), with the limits that apply to them."""
        names = [user] if user is not None else sorted(self.accounts)
        users = {}
        for name in names:
            tokens, usd = self.limits(name)
            users[name] = {
                **asdict(self.account(name)),
                "effective_limit_tokens": tokens,
                "effective_limit_usd": usd,
            }
        return {
            "users": users,
            "default_limit_tokens": self.limit_tokens,
            "default_limit_usd": self.limit_usd,
        }

    def _price(self, model: str) -> Price:
        try:
            return self.prices.for_model(model) or Price(0.0, 0.0, 0.0, 0.0)
        except ValueError:  # no prefix matches: count tokens, estimate no cost
            return Price(0.0, 0.0, 0.0, 0.0)

    def _save(self) -> None:
        if self.path is None:
            return
        with self._lock:
            text = json.dumps({"users": {n: asdict(a) for n, a in self.accounts.items()}}, indent=1)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".usage-", dir=self.path.parent)
        try:
            os.fchmod(handle, 0o600)
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(text)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
