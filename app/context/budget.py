"""The token budget of one model call: the reply reserve and the working-memory layer (DESIGN 7).

Pure arithmetic: what a request may spend on the context, and how much of that the summary may
take. Never looks at messages or the working memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

DEFAULT_TOKEN_BUDGET: Final = 128_000
MAX_TOKEN_BUDGET: Final = 10_000_000
REPLY_RESERVE_SHARE: Final = 15
"""Percent of the budget kept for the reply, at least ``REPLY_RESERVE_MIN``, at most half."""
REPLY_RESERVE_MIN: Final = 20_000
WM_LAYER_CAP: Final = 8_000


def reply_reserve(budget: int) -> int:
    """``min(max(15 % of budget, 20 000), 50 % of budget)``, in whole tokens rounded down."""
    return min(max(budget * REPLY_RESERVE_SHARE // 100, REPLY_RESERVE_MIN), budget // 2)


@dataclass(frozen=True, slots=True)
class Budget:
    budget: int
    reserved: int

    @property
    def usable(self) -> int:
        """What the assembled context may use: the budget minus the reply reserve."""
        return self.budget - self.reserved

    @property
    def wm_layer(self) -> int:
        """The most the summary may take: ``min(8 000, the usable budget)``; what the
        unsummarised messages leave of it is the summary's share (``assembly``)."""
        return min(WM_LAYER_CAP, self.usable)


class InvalidBudget(ValueError):
    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field_name = field_name
        self.message = message


def plan_budget(budget: int, reserve_tokens: int | None = None) -> Budget:
    """The budget with its reply reserve; ``reserve_tokens`` overrides the formula (0 allowed)."""
    if not 1 <= budget <= MAX_TOKEN_BUDGET:
        raise InvalidBudget("token_budget", f"token_budget must be 1 to {MAX_TOKEN_BUDGET}")
    reserved = reply_reserve(budget) if reserve_tokens is None else reserve_tokens
    if not 0 <= reserved < budget:
        raise InvalidBudget(
            "reserve_tokens", "reserve_tokens must be at least 0 and less than token_budget"
        )
    return Budget(budget, reserved)
