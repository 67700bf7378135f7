"""An agent loop on workmem: every turn is appended, the agent session is committed when its
pending tokens pass a threshold, and each model call sends the context workmem assembles.

Plain Python: the ``openai`` SDK for the model (any OpenAI-compatible endpoint) and workmem's own
typed client (``workmem_client.AsyncWorkmemClient``). The model gets one tool, ``read_archive``, to
fetch exact older messages when the summary is not enough. Run it against ``workmem serve``, one
user message per input line:

    WORKMEM_URL=http://127.0.0.1:8000 WORKMEM_API_KEY=wm_... \\
    OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... \\
    python examples/agent_loop.py --model gpt-4o-mini
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import openai
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessage,
    ChatCompletionMessageParam,
)

from workmem_client import AsyncWorkmemClient, WorkmemError

READ_ARCHIVE: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": "read_archive",
        "description": "Read the exact messages of an archived part of this conversation. The "
        "system prompt lists the archives by number with the messages each one holds.",
        "parameters": {
            "type": "object",
            "properties": {"archive_seq": {"type": "integer", "minimum": 1}},
            "required": ["archive_seq"],
            "additionalProperties": False,
        },
    },
}


@dataclass(frozen=True)
class LoopConfig:
    model: str = "gpt-4o-mini"
    system_prompt: str = "You are a helpful assistant."
    commit_threshold_tokens: int = 8_000
    """Commit once this many tokens wait outside the agent session's keep window."""
    token_budget: int = 128_000
    """The model's context window: the assembled context plus the reply fit in it."""
    fill: bool = False
    """Spend the room the budget leaves on the newest messages the summary covers: for a budget
    that is what each call should cost (a small one), not a whole large window."""
    max_tool_rounds: int = 3
    archive_excerpt_chars: int = 8_000
    """The most of an archive one ``read_archive`` result carries."""


def stored_reply(reply: ChatCompletionMessage) -> dict[str, Any]:
    """The model's reply as an OpenAI message to store (and to send back on the next call)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
            for call in reply.tool_calls
            if call.type == "function"
        ]
    return message


class AgentLoop:
    def __init__(
        self,
        workmem: AsyncWorkmemClient,
        model: openai.AsyncOpenAI,
        agent_session_id: str,
        config: LoopConfig | None = None,
    ) -> None:
        self.workmem = workmem
        self.model = model
        self.agent_session_id = agent_session_id
        self.config = config or LoopConfig()
        self.commits = 0

    async def turn(self, user_text: str) -> str:
        """One user turn: the model may read archives a few times, then answers in text."""
        await self._append([{"role": "user", "content": user_text}])
        for round_ in range(self.config.max_tool_rounds + 1):
            reply = await self._call_model(tools_allowed=round_ < self.config.max_tool_rounds)
            message = stored_reply(reply)
            if "tool_calls" not in message:
                await self._append([message])
                return reply.content or ""
            results = [await self._run_tool(call) for call in message["tool_calls"]]
            # The call and its results go in one batch: the stored history never holds a call
            # without its results, so a commit in between cannot separate them.
            await self._append([message, *results])
        raise RuntimeError("unreachable: the last round offers no tools")

    async def _append(self, messages: Sequence[dict[str, Any]]) -> None:
        """Append atomically (a tool group in one batch); commit once enough tokens are pending
        (a worker writes the working memory in the background)."""
        appended = await self.workmem.append_batch(self.agent_session_id, messages)
        if appended.pending_tokens > self.config.commit_threshold_tokens:
            await self.workmem.commit(self.agent_session_id)
            self.commits += 1

    async def _call_model(self, *, tools_allowed: bool) -> ChatCompletionMessage:
        messages = await self.workmem.chat_messages(
            self.agent_session_id,
            system_prompt=self.config.system_prompt,
            token_budget=self.config.token_budget,
            fill=self.config.fill,
        )
        completion = await self.model.chat.completions.create(
            model=self.config.model,
            messages=cast("list[ChatCompletionMessageParam]", messages),
            tools=[READ_ARCHIVE] if tools_allowed else openai.omit,
        )
        return completion.choices[0].message

    async def _run_tool(self, call: dict[str, Any]) -> dict[str, Any]:
        function = call["function"]
        try:
            if function["name"] != "read_archive":
                raise ValueError(f"unknown tool {function['name']!r}")
            archive_seq = int(json.loads(function["arguments"])["archive_seq"])
            archive = await self.workmem.archive(self.agent_session_id, archive_seq)
            lines = [
                f"[{item.seq}] {item.role}: {item.message.get('content') or ''}"
                for item in archive.messages
            ]
            content = "\n".join(lines)[: self.config.archive_excerpt_chars]
        except (ValueError, KeyError, TypeError, WorkmemError) as error:
            content = f"error: {error}"
        return {"role": "tool", "tool_call_id": call["id"], "content": content}


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--workmem-url", default=os.environ.get("WORKMEM_URL", "http://127.0.0.1:8000")
    )
    parser.add_argument("--workmem-key", default=os.environ.get("WORKMEM_API_KEY"))
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY"))
    parser.add_argument("--model", default=LoopConfig.model)
    parser.add_argument("--session", help="continue this agent session instead of a new one")
    parser.add_argument("--commit-threshold", type=int, default=LoopConfig.commit_threshold_tokens)
    parser.add_argument("--token-budget", type=int, default=LoopConfig.token_budget)
    parser.add_argument(
        "--fill", action="store_true", help="fill the budget with recent covered messages too"
    )
    args = parser.parse_args(argv)
    if not args.workmem_key:
        parser.error("set WORKMEM_API_KEY or pass --workmem-key")
    config = LoopConfig(
        model=args.model,
        commit_threshold_tokens=args.commit_threshold,
        token_budget=args.token_budget,
        fill=args.fill,
    )
    async with (
        AsyncWorkmemClient(args.workmem_url, args.workmem_key) as workmem,
        openai.AsyncOpenAI(base_url=args.base_url, api_key=args.api_key) as model,
    ):
        agent_session_id = args.session or str((await workmem.create_session()).id)
        sys.stdout.write(f"agent session {agent_session_id}\n")
        loop = AgentLoop(workmem, model, agent_session_id, config)
        for line in sys.stdin:
            if not line.strip():
                break
            sys.stdout.write(f"assistant: {await loop.turn(line.strip())}\n")
            sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(main())
