"""Audit fixture data built by real commits: a scripted model whose replies trigger every guard.

Tenant A has two agent sessions. "billing" (three archives) has its title change, a dropped
constraint, a Key Facts shrink, a Files update that loses a path, an Errors rewrite and a dropped
open issue refused or repaired by the guards in archive 2. "support" has 26 Key Facts (at its
size threshold), Open Issues restored twice, recovered arguments, a failed archive and a
consolidation that loses its anchors. Tenant B has one agent session, to prove isolation.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
from asgi_lifespan import LifespanManager

from app.archives.generation import WorkingMemoryGenerator
from app.config import Settings
from app.db import Database
from app.llm.fakes import ScriptedChatModel, ScriptStep, tool_call
from app.llm.ports import PermanentModelError
from app.main import create_app
from app.wm.sections import Section
from tests.conftest import TenantKeys, make_tenant

BILLING_FIRST = """# Working Memory

## Session Title
Billing migration to Stripe

## Current State
Moving invoice creation from the legacy billing module to Stripe.

## Task & Goals
- Migrate invoice creation to Stripe
- Never deploy on Fridays

## Key Facts & Decisions
- Chose Stripe because the legacy gateway is end-of-life
- Decided on 2026-11-02 to keep PayPal for refunds
- The `STRIPE_API_KEY` lives in Vault
- Invoices are stored in cents
- Webhook retries last 3 days
- Finance signs off every Monday
- Checkout runs on Node 20
- Postgres 16 holds the ledger

## Files & Context
- app/billing/service.py
- app/billing/models.py

## Errors & Corrections
- ImportError: no module named stripe

## Open Issues
- Who owns the on-call rota?
- Do we need a migration for old invoices?
"""

SUPPORT_FACTS = "\n".join(f"- Ticket {n} from Acme closed on 2026-10-{n:02d}" for n in range(1, 27))

SUPPORT_FIRST = f"""# Working Memory

## Session Title
Refund policy for the support bot

## Task & Goals
- Always answer in English
- Only refund within 30 days

## Key Facts & Decisions
{SUPPORT_FACTS}

## Open Issues
- Does the refund cover shipping?
- Which currency for EU customers?
- Can agents override the limit?
"""

OTHER_FIRST = """# Working Memory

## Session Title
Other tenant's secret project

## Open Issues
- Who owns the on-call rota?
"""


def keep_all(**changes: dict[str, Any]) -> str:
    """Update arguments naming all seven sections: KEEP, except the ``changes`` given."""
    sections: dict[str, Any] = {section.value: {"op": "KEEP"} for section in Section}
    for name, op in changes.items():
        sections[Section[name].value] = op
    return json.dumps({"sections": sections})


def update(content: str) -> dict[str, Any]:
    return {"op": "UPDATE", "content": content}


def append_items(*items: str) -> dict[str, Any]:
    return {"op": "APPEND", "items": list(items)}


def created(markdown: str) -> ScriptStep:
    return tool_call(json.dumps({"markdown": markdown}))


BILLING_SCRIPT: list[ScriptStep] = [
    created(BILLING_FIRST),
    tool_call(
        keep_all(
            SESSION_TITLE=update("Weekend plans"),
            # Messages 3 and 4 are this archive's: the references become each item's sources.
            CURRENT_STATE=update("Stripe client wired in; invoices next. (#3, #4)"),
            TASK_AND_GOALS=update("- Migrate invoice creation to Stripe"),
            KEY_FACTS=update("- Stripe chosen (#4)"),
            FILES=update("- app/billing/service.py"),
            ERRORS=update("- TypeError: amount must be an integer"),
            OPEN_ISSUES=update("- Do we need a migration for old invoices?"),
        )
    ),
    tool_call(
        keep_all(
            CURRENT_STATE=update("Invoices migrated; webhooks next."),
            KEY_FACTS=append_items("Webhooks are signed with HMAC"),
            FILES=update(
                "- app/billing/service.py\n- app/billing/models.py\n- app/billing/webhooks.py"
            ),
            OPEN_ISSUES=update("- [resolved] Do we need a migration for old invoices?"),
        )
    ),
]

_SUPPORT_SECOND = keep_all(
    CURRENT_STATE=update("Drafting the refund answers."),
    KEY_FACTS=update("- Refunds are processed by Stripe"),
    OPEN_ISSUES=update("- Which currency for EU customers?\n- Can agents override the limit?"),
)

SUPPORT_SCRIPT: list[ScriptStep] = [
    created(SUPPORT_FIRST),
    # Cut before its closing brace: the repair closes it (generator llm_recovered).
    tool_call(_SUPPORT_SECOND[:-1]),
    PermanentModelError("the model refused the request", code="client_error", status=400),
    tool_call(
        keep_all(
            CURRENT_STATE=update("Refund answers drafted."),
            KEY_FACTS=update(
                "- Refunds go back to the card\n- Shipping is refunded\n- Agents escalate\n"
                "- Limits are per order\n- Answers are short"
            ),
            OPEN_ISSUES=update(
                "- [silently dropped, restored] Does the refund cover shipping?\n"
                "- Can agents override the limit?"
            ),
        )
    ),
]

OTHER_SCRIPT: list[ScriptStep] = [created(OTHER_FIRST)]


@dataclass(frozen=True)
class AuditData:
    url: str
    tenant: TenantKeys
    other: TenantKeys
    billing: str
    support: str
    other_session: str

    @property
    def billing_uuid(self) -> uuid.UUID:
        return uuid.UUID(self.billing)

    @property
    def support_uuid(self) -> uuid.UUID:
        return uuid.UUID(self.support)


# What the user said in each session's first round: the constraints its scripted working
# memory records are the user's own (the unsourced-constraint rule would mark them otherwise).
FIRST_WORDS = {
    "billing": " Never deploy on Fridays.",
    "support": " Always answer in English. Only refund within 30 days.",
}


async def _session(http: httpx.AsyncClient, keys: TenantKeys, external_id: str, rounds: int) -> str:
    created_ = await http.post(
        "/v1/sessions", json={"external_id": external_id}, headers=keys.write
    )
    assert created_.status_code == 201, created_.text
    agent_session_id: str = created_.json()["id"]
    for round_ in range(1, rounds + 1):
        batch = await http.post(
            f"/v1/sessions/{agent_session_id}/messages:batch",
            json={
                "messages": [
                    {
                        "role": "user",
                        "content": f"{external_id} round {round_}: carry on"
                        + (FIRST_WORDS.get(external_id, "") if round_ == 1 else ""),
                    },
                    {"role": "assistant", "content": f"Working on round {round_}."},
                ]
            },
            headers=keys.write,
        )
        assert batch.status_code == 201, batch.text
        committed = await http.post(
            f"/v1/sessions/{agent_session_id}/commit",
            json={"keep_recent_count": 0, "wait": True},
            headers=keys.write,
        )
        assert committed.json()["status"] in ("done", "failed"), committed.text
    return agent_session_id


async def build(database: Database, url: str, settings: Settings) -> AuditData:
    """Commit every scripted archive for real, through the API with the scripted model."""
    tenant = await make_tenant(database, "audit-a")
    other = await make_tenant(database, "audit-b")
    chat = ScriptedChatModel([*BILLING_SCRIPT, *SUPPORT_SCRIPT, *OTHER_SCRIPT])
    generator = WorkingMemoryGenerator(chat, fallback="none")
    app = create_app(
        settings.model_copy(update={"database_url": url}), database=database, generator=generator
    )
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://workmem.test"
        ) as http,
    ):
        billing = await _session(http, tenant, "billing", len(BILLING_SCRIPT))
        support = await _session(http, tenant, "support", len(SUPPORT_SCRIPT))
        other_session = await _session(http, other, "other", len(OTHER_SCRIPT))
    assert chat.remaining == 0, "every scripted reply was used"
    return AuditData(url, tenant, other, billing, support, other_session)


def session_with(
    data: AuditData, external_id: str, script: list[ScriptStep]
) -> tuple[TenantKeys, str]:
    """An agent session committed for real with its own scripted model, in a tenant of its own
    (the other tests count tenant A's archives)."""

    async def work() -> tuple[TenantKeys, str]:
        database = Database.from_url(data.url, pool_size=2)
        chat = ScriptedChatModel(script)
        app = create_app(
            Settings(database_url=data.url, worker_enabled=False),
            database=database,
            generator=WorkingMemoryGenerator(chat, fallback="none"),
        )
        try:
            async with (
                LifespanManager(app) as manager,
                httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=manager.app), base_url="http://workmem.test"
                ) as http,
            ):
                keys = await make_tenant(database, external_id)
                made = await _session(http, keys, external_id, len(script))
        finally:
            await database.dispose()
        assert chat.remaining == 0, "every scripted reply was used"
        return keys, made

    # Its own event loop, in a thread: the caller may be inside a running one.
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, work()).result()
