"""The SQL of memory search: the hybrid statement in its two forms (the vector retriever exact, or
on the HNSW index), the counts a form is chosen from (``vector_plan``), and the index scan's
settings. Text SQL, as the claim of the archive worker is: CTEs, window functions and a
set-returning function read best as written.
"""

from __future__ import annotations

from sqlalchemy import text

# The rows both retrievers see: the tenant, the key's user, the filters, like vectors only,
# unexpired, and current memories unless asked.
_FILTERS = """
    tenant_id = :tenant_id AND embedding_model = :model
    AND (expires_at IS NULL OR expires_at > now())
    AND (:include_superseded OR superseded_by IS NULL)
    AND (CAST(:bound_user AS text) IS NULL OR user_id = CAST(:bound_user AS text))
    AND (CAST(:user_id AS text) IS NULL OR user_id = CAST(:user_id AS text))
    AND (CAST(:category AS text) IS NULL OR category = CAST(:category AS text))
"""

# The vector retriever through the HNSW index: ORDER BY … LIMIT, filtered as the scan goes.
_BY_INDEX = f"""
nearest AS (
    SELECT memory_id, updated_at, embedding <=> CAST(:vector AS vector) AS distance
    FROM memories
    WHERE {_FILTERS}
    ORDER BY embedding <=> CAST(:vector AS vector)
    LIMIT :per_retriever
)"""  # noqa: S608 - fixed fragments; every value is bound

# Rows whose user id and embedder name are short enough for the covering index
# ``ix_memories_vector_scope`` (its entries must fit in a btree page). The same text is the
# predicate of that index and of ``ix_memories_long_scope`` (the rest, normally none), so the
# planner can prove each branch below is served by its index. Keep it in step with the revision
# ``20261202_0310_vector_scope``.
COVERED = "COALESCE(octet_length(user_id), 0) + octet_length(embedding_model) <= 320"
NOT_COVERED = "COALESCE(octet_length(user_id), 0) + octet_length(embedding_model) > 320"

# The vector retriever exactly: the filtered rows first, each compared with the query. Current
# memories are read from the covering index (tenant, category, user, with the vector and every
# filtered column in it), so no table page is read: a user's rows are neighbours in the index,
# where in the table they are spread over as many pages as there are rows. The category list
# holds the one asked for or all five (a closed set), so a user's rows are found in five index
# ranges on every PostgreSQL. MATERIALIZED keeps the planner from the HNSW index.
_EXACT = f"""
filtered AS MATERIALIZED (
    SELECT memory_id, updated_at, embedding <=> CAST(:vector AS vector) AS distance
    FROM memories
    WHERE {_FILTERS} AND category = ANY(CAST(:categories AS text[])) AND {COVERED}
    UNION ALL
    SELECT memory_id, updated_at, embedding <=> CAST(:vector AS vector) AS distance
    FROM memories
    WHERE {_FILTERS} AND {NOT_COVERED}
), nearest AS (
    SELECT memory_id, updated_at, distance FROM filtered
    ORDER BY distance, memory_id
    LIMIT :per_retriever
)"""  # noqa: S608 - fixed fragments; every value is bound

# One statement: each retriever is ORDER BY … LIMIT — the vector one exactly or on its HNSW
# index (``vector_plan`` chooses), the text one on its GIN index (websearch syntax: all words,
# "quoted phrases", or, -word) through workmem_memory_text_candidates, which the schema's
# revision explains — then reciprocal rank fusion, the min_score cut on the rounded cosine
# similarity, ties by recency and id, and only the final rows are read. Both retrievers see the
# same rows. Text SQL, as the claim of the archive worker is: CTEs, window functions and a
# set-returning function read best as written.
_SEARCH = """
WITH {nearest}, by_vector AS (
    SELECT memory_id, 1 - distance AS similarity, updated_at,
           row_number() OVER (ORDER BY distance, memory_id) AS rank
    FROM nearest
), by_text AS (
    SELECT c.memory_id, c.similarity, c.updated_at,
           row_number() OVER (ORDER BY c.text_rank DESC, c.memory_id) AS rank
    FROM workmem_memory_text_candidates(
        CAST(:query AS text), CAST(:vector AS vector), CAST(:per_retriever AS integer),
        CAST(:model AS text), CAST(:bound_user AS text), CAST(:user_id AS text),
        CAST(:category AS text), CAST(:include_superseded AS boolean)) AS c
    WHERE NOT EXISTS (
        SELECT FROM memories x
        WHERE x.tenant_id = :tenant_id AND x.memory_id = c.memory_id AND x.expires_at <= now()
    )
), fused AS (
    SELECT memory_id, min(vector_rank) AS vector_rank, min(text_rank) AS text_rank,
           sum(1.0::float8 / (:rrf_k + rank)) AS fused,
           round(max(similarity)::numeric, :digits) AS score, max(updated_at) AS updated_at
    FROM (
        SELECT memory_id, rank AS vector_rank, NULL::bigint AS text_rank, rank, similarity,
               updated_at
        FROM by_vector
        UNION ALL
        SELECT memory_id, NULL::bigint, rank, rank, similarity, updated_at FROM by_text
    ) AS ranked
    GROUP BY memory_id
), best AS (
    SELECT * FROM fused
    WHERE score >= :min_score
    ORDER BY fused DESC, updated_at DESC, memory_id
    LIMIT :limit
)
SELECT b.vector_rank, b.text_rank, b.fused, b.score,
       m.memory_id, m.user_id, m.agent_id, m.category, m.slot, m.slot_value, m.content,
       m.confidence, m.agent_session_id, m.archive_seq, m.source_seqs, m.embedding_model,
       m.superseded_by, m.created_at, m.updated_at, m.expires_at
FROM best b
JOIN memories m ON m.tenant_id = :tenant_id AND m.memory_id = b.memory_id
WHERE m.expires_at IS NULL OR m.expires_at > now()
ORDER BY b.fused DESC, b.updated_at DESC, b.memory_id
"""
SEARCH_BY_INDEX = text(_SEARCH.format(nearest=_BY_INDEX))
SEARCH_EXACT = text(_SEARCH.format(nearest=_EXACT))

# What a plan is chosen from: the filtered rows, counted up to a cap; the rows the index holds
# (the catalog's estimate, which every login may read: -1 before the first ANALYZE).
SIZES = text(
    f"""
SELECT (SELECT count(*) FROM (SELECT 1 FROM memories WHERE {_FILTERS} LIMIT :cap) AS capped),
       (SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass('memories'))
"""  # noqa: S608 - fixed fragments; every value is bound
)

# Settings of the index scan, for this transaction only (one round trip).
EF_SEARCH = text("SELECT set_config('hnsw.ef_search', :ef_search, true)")
ITERATIVE = text(
    "SELECT set_config('hnsw.ef_search', :ef_search, true),"
    " set_config('hnsw.iterative_scan', 'strict_order', true)"
)
