"""The hybrid order, checked independently: reciprocal rank fusion, ties by recency, the cut."""

from __future__ import annotations

import uuid

import httpx

from app.db import Database
from app.memories.hashing import HashingEmbedder
from app.memories.ranking import RRF_K
from app.memories.service import MemoryService, embed_query
from app.tenancy.principal import Principal, Role
from tests.conftest import TenantKeys
from tests.memories.helpers import new_session, search, state

FACTS = (
    "My favorite color is teal.",
    "I work as a nurse at the city hospital.",
    "I have a dog named Biscuit who loves the city park.",
    "I went to a pottery class in the city last Saturday.",
    "My sister Anna works at the hospital too.",
)


async def test_results_follow_reciprocal_rank_fusion_of_the_two_retrievers(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    await state(client, tenant, await new_session(client, tenant, "ola"), *FACTS)
    hits = await search(client, tenant.reader, "city hospital", min_score=-1, limit=50)
    assert len(hits) == len(FACTS)
    assert any(hit["text_rank"] is not None for hit in hits)
    for hit in hits:
        ranks = [rank for rank in (hit["vector_rank"], hit["text_rank"]) if rank is not None]
        assert hit["fused"] == round(sum(1 / (RRF_K + rank) for rank in ranks), 8)
    keys = [(-hit["fused"], hit["updated_at"], hit["id"]) for hit in hits]
    assert [k[0] for k in keys] == sorted(k[0] for k in keys)
    # Every memory is a vector candidate in a tenant this small: ranks 1..n, each once.
    assert sorted(hit["vector_rank"] for hit in hits) == list(range(1, len(FACTS) + 1))
    text_ranked = sorted((h for h in hits if h["text_rank"]), key=lambda h: h["text_rank"])
    assert [h["text_rank"] for h in text_ranked] == list(range(1, len(text_ranked) + 1))
    assert {h["content"] for h in text_ranked} == {
        "I work as a nurse at the city hospital.",
    }


async def test_equal_fused_ranks_are_ordered_newest_first(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    """With one candidate per retriever, the closest vector and the best text match tie at
    1 / (60 + 1); the one stated later comes first, whichever retriever found it."""
    near = "I love my red bicycle."
    matching = (
        "Yesterday I sold my red bike, a green kayak, an old tent, two lamps, a wooden desk, "
        "three chairs, a guitar amplifier and some winter boots at the flea market."
    )
    principal = Principal(tenant.tenant_id, uuid.uuid4(), Role.READER, None)
    for first, second in ((near, matching), (matching, near)):
        agent_session_id = await new_session(client, tenant, f"tie-{first[:3]}")
        await state(client, tenant, agent_session_id, first)
        await state(client, tenant, agent_session_id, second)
        query = await embed_query(HashingEmbedder(), "red bike")
        async with database.tenant(tenant.tenant_id) as db:
            hits = await MemoryService(db, principal).search(
                query, user_id=f"tie-{first[:3]}", limit=5, min_score=-1, per_retriever=1
            )
        assert [(h.vector_rank, h.text_rank) for h in hits] in (
            [(1, None), (None, 1)],
            [(None, 1), (1, None)],
        ), hits
        assert hits[0].fused == hits[1].fused
        assert hits[0].memory.content == second
        assert hits[0].memory.updated_at > hits[1].memory.updated_at
