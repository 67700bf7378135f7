"""The one helper over a context: the list a chat call takes.

Pure: never sends a request.
"""

from __future__ import annotations

from typing import Any

from workmem_client.models import ContextRead


def chat_messages(context: ContextRead, system_prompt: str | None = None) -> list[dict[str, Any]]:
    """The context as ``messages`` for ``chat.completions.create``: one system message (your
    prompt, then the context's ``system_prompt_addition``), then the summary and raw messages.
    No system message when both are empty."""
    system = "\n\n".join(part for part in (system_prompt, context.system_prompt_addition) if part)
    head = [{"role": "system", "content": system}] if system else []
    return [*head, *context.messages]
