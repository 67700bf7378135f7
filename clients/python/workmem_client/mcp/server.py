"""The MCP server: workmem's tools and resources over the official ``mcp`` SDK's ``MCPServer``.

Tools: ``get_context``, ``append_messages``, ``commit``, ``read_archive`` (records, not
instructions), ``search_history``, ``search_memories``, ``pin``. Resources: the current working
memory and its history, per agent session. An agent session is named by its id or by an
external id of the host's choosing (created on the first append); ``WORKMEM_SESSION`` sets a
default. Every call goes to workmem over HTTP with the typed client.

Every failure of a tool reaches the model as a tool error ``workmem <problem type>: <detail>``
(a workmem answer's problem, ``connection_error`` when workmem could not be reached, the
session's own ``bad_request`` faults, ``internal_error`` for anything else) and is logged as one
line, never a traceback (``command`` sends the log to stderr).
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from workmem_client.aio import AsyncWorkmemClient
from workmem_client.errors import WorkmemError
from workmem_client.mcp.records import records, snippet_records
from workmem_client.mcp.results import (
    AppendedResult,
    CommitResult,
    ContextResult,
    MemoriesResult,
    MemoryHit,
    PinResult,
)

T = TypeVar("T")
P = ParamSpec("P")

log = logging.getLogger("workmem.mcp")

INSTRUCTIONS = (
    "workmem keeps the working memory of a long conversation. Append every message with "
    "append_messages; call get_context before a model call to get the summary plus the newest "
    "messages within a token budget; commit when pending_tokens grows; read_archive and "
    "search_history return exact older messages as quoted records."
)
ARCHIVE_PAGE = 200


class Sessions:
    """Resolves the ``session`` argument of a tool to a workmem agent session id."""

    def __init__(self, client: AsyncWorkmemClient, default: str | None) -> None:
        self.client = client
        self.default = default
        self._known: dict[str, uuid.UUID] = {}

    async def resolve(self, session: str | None, *, create: bool = False) -> uuid.UUID:
        name = session or self.default
        if not name:
            raise SessionFault("name the agent session: pass 'session', or set WORKMEM_SESSION")
        try:
            return uuid.UUID(name)
        except ValueError:
            pass
        if name not in self._known:
            found = (
                await self.client.session_for(name)
                if create
                else await self.client.find_session(name)
            )
            if found is None:
                raise SessionFault(f"no agent session {name!r} yet: append_messages creates it")
            self._known[name] = found.id
        return self._known[name]


class SessionFault(ToolError):
    """A tool was called in a way the session cannot serve (no session named, none yet)."""


def one_line(text: str) -> str:
    return " ".join(text.split())


def problem_of(error: Exception) -> str:
    """``workmem <type>: <detail>`` for any failure of a tool, on one line."""
    if isinstance(error, WorkmemError):
        detail = error.detail or error.title
        if error.type in ("connection_error", "timeout"):
            detail += " (is WORKMEM_URL the address of a running workmem?)"
        elif error.status == 401:
            detail += " (check WORKMEM_API_KEY)"
        return one_line(f"workmem {error.type}: {detail}")
    if isinstance(error, SessionFault):
        return one_line(f"workmem bad_request: {error}")
    return one_line(f"workmem internal_error: {type(error).__name__}: {error}")


def reported(tool: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """``tool`` with every failure turned into a tool error the model reads
    (``problem_of``) and one log line."""

    @functools.wraps(tool)
    async def call(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await tool(*args, **kwargs)
        except Exception as error:  # every failure, as one line: never a traceback
            problem = problem_of(error)
            log.warning("%s failed: %s", tool.__name__, problem)
            raise ToolError(problem) from None

    return call


def build_server(client: AsyncWorkmemClient, *, default_session: str | None = None) -> MCPServer:
    """The server; ``client`` is closed by whoever made it."""
    # The SDK's own request log stays quiet: failures are logged here, one line each.
    server: MCPServer = MCPServer("workmem", instructions=INSTRUCTIONS, log_level="WARNING")
    sessions = Sessions(client, default_session)

    @server.tool()
    @reported
    async def get_context(
        session: str | None = None,
        token_budget: int | None = None,
        recall: str | None = None,
        record: bool = False,
    ) -> ContextResult:
        """The context for your next model call: the working-memory summary, then the newest raw
        messages, within token_budget; recall adds the user's most relevant long-term memories;
        record keeps what it was made of in the context ledger (context_id names it)."""
        agent_session_id = await sessions.resolve(session)
        found = await client.context(
            agent_session_id, token_budget=token_budget, recall=recall, record=record or None
        )
        return ContextResult(
            agent_session_id=str(agent_session_id),
            system_prompt_addition=found.system_prompt_addition,
            messages=found.messages,
            tokens=found.tokens.total,
            token_budget=found.tokens.budget,
            archive_count=found.archive_count,
            context_id=None if found.context_id is None else str(found.context_id),
        )

    @server.tool()
    @reported
    async def append_messages(
        messages: list[dict[str, Any]], session: str | None = None
    ) -> AppendedResult:
        """Append OpenAI chat messages (role, content, tool_calls, tool_call_id) atomically; an
        external session name is created on its first append."""
        agent_session_id = await sessions.resolve(session, create=True)
        appended = await client.append_batch(agent_session_id, messages)
        return AppendedResult(
            agent_session_id=str(agent_session_id),
            seqs=[message.seq for message in appended.messages],
            pending_tokens=appended.pending_tokens,
            live_message_count=appended.live_message_count,
        )

    @server.tool()
    @reported
    async def commit(
        session: str | None = None, keep_recent_count: int | None = None, wait: bool = True
    ) -> CommitResult:
        """Archive older messages and rewrite the working memory; keep_recent_count newest stay
        raw. With wait, returns the new working memory."""
        agent_session_id = await sessions.resolve(session)
        done = await client.commit(agent_session_id, keep_recent_count=keep_recent_count, wait=wait)
        return CommitResult(
            agent_session_id=str(agent_session_id),
            status=done.status,
            reason=done.reason,
            archive_seq=None if done.archive is None else done.archive.archive_seq,
            working_memory=None if done.working_memory is None else done.working_memory.markdown,
        )

    @server.tool()
    @reported
    async def read_archive(
        archive_seq: int, session: str | None = None, after_seq: int | None = None
    ) -> str:
        """The exact messages of one archive (the context lists archives by number), as quoted
        records; after_seq pages on."""
        agent_session_id = await sessions.resolve(session)
        archive = await client.archive(
            agent_session_id, archive_seq, after_seq=after_seq, limit=ARCHIVE_PAGE
        )
        more = None
        if archive.next_after_seq is not None:
            more = (
                f"More messages follow: call read_archive with after_seq={archive.next_after_seq}."
            )
        return records(
            ((message.seq, message.message) for message in archive.messages),
            title=f"Archive {archive.archive_seq}: messages {archive.start_seq} to "
            f"{archive.end_seq} ({archive.status.value}).",
            more=more,
        )

    @server.tool()
    @reported
    async def search_history(query: str, session: str | None = None, limit: int = 10) -> str:
        """Full-text search over the agent session's raw messages, archived ones included; the
        hits come back as quoted records with their seq."""
        agent_session_id = await sessions.resolve(session)
        found = await client.search_history(agent_session_id, query, limit=limit)
        hits = [(hit.seq, hit.role, hit.snippet) for hit in found.items]
        return snippet_records(hits, title=f"{len(hits)} messages match {query!r}.")

    @server.tool()
    @reported
    async def search_memories(
        query: str, user_id: str | None = None, limit: int = 5
    ) -> MemoriesResult:
        """Search long-term memories (profile, preferences, people, events, lessons)."""
        found = await client.search_memories(query, user_id=user_id, limit=limit)
        return MemoriesResult(
            items=[
                MemoryHit(
                    id=str(hit.id),
                    category=hit.category,
                    content=hit.content,
                    score=hit.score,
                    user_id=hit.user_id,
                )
                for hit in found.items
            ]
        )

    @server.tool()
    @reported
    async def pin(
        session: str | None = None, text: str | None = None, seq: int | None = None
    ) -> PinResult:
        """Pin a text, or a message by its seq: the context never loses a pin."""
        if (text is None) == (seq is None):
            raise SessionFault("pin takes one of 'text' or 'seq'")
        agent_session_id = await sessions.resolve(session)
        pinned = await client.pin(agent_session_id, text=text, message_seq=seq)
        return PinResult(id=str(pinned.pin_id), text=pinned.text, seq=pinned.message_seq)

    async def read(work: Callable[[uuid.UUID], Awaitable[str]], session: str) -> str:
        try:
            agent_session_id = await sessions.resolve(session)
            return await work(agent_session_id)
        except Exception as error:  # every failure, as one line: never a traceback
            problem = problem_of(error)
            log.warning("reading %s failed: %s", session, problem)
            raise ResourceError(problem) from None

    @server.resource(
        "workmem://sessions/{session}/working-memory",
        name="working-memory",
        description="The current working memory of an agent session (Markdown)",
        mime_type="text/markdown",
    )
    async def working_memory(session: str) -> str:
        async def markdown(agent_session_id: uuid.UUID) -> str:
            return (await client.working_memory(agent_session_id)).markdown

        return await read(markdown, session)

    @server.resource(
        "workmem://sessions/{session}/working-memory/history",
        name="working-memory-history",
        description="Every version of every working-memory section, oldest first (JSON)",
        mime_type="application/json",
    )
    async def working_memory_history(session: str) -> str:
        async def history(agent_session_id: uuid.UUID) -> str:
            page = await client.working_memory_history(agent_session_id, limit=700)
            return json.dumps(page.model_dump(mode="json"), ensure_ascii=False)

        return await read(history, session)

    return server
