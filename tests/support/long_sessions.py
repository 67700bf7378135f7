"""Long agent sessions made up for tests of batched generation: many batches at the smallest
input budget, with everything the extractor's rules and the attribution read (the user's
constraints and facts, tool calls and their results, paths, errors, fixes, questions)."""

from __future__ import annotations

from typing import Any

_FILLER = (
    "The surrounding module keeps its configuration in one place and every caller reads it "
    "through the same accessor, so the change stays local to the function named above. "
)


def coding_session(turns: int, *, seed: int = 0) -> list[dict[str, Any]]:
    """``turns`` turns of a coding agent: a user request (a constraint every few turns, a fact
    about the user now and then), a tool call, its result (a traceback every third turn), and
    the assistant's answer (a fix after an error)."""
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        n = turn + seed
        path = f"src/pkg/module_{n % 7}/file_{n}.py"
        request = f"Please look at {path} and tell me why test_{n} fails. "
        if turn % 4 == 0:
            request += f"You must never change the public signature of handler_{n}. "
        if turn % 9 == 4:
            request += f"I live in city_{n % 3} and I prefer short answers about part_{n}. "
        messages.append({"role": "user", "content": request + _FILLER * 2})
        call_id = f"call_{seed}_{turn}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": f'{{"path": "{path}"}}'},
                    }
                ],
            }
        )
        if turn % 3 == 1:
            output = (
                "Traceback (most recent call last):\n"
                f'  File "{path}", line {10 + n}, in handler_{n % 5}\n'
                f"ValueError: invalid literal for int() with base 10: 'x{n}'\n"
            )
        else:
            output = f"def handler_{n % 5}(value):\n    return int(value) + {n}\n"
        messages.append({"role": "tool", "tool_call_id": call_id, "content": output + _FILLER})
        answer = f"I read {path}. "
        if turn % 3 == 1:
            answer += f"Fixed by parsing the value with a default in handler_{n % 5}. "
        else:
            answer += f"Is test_{n} expected to pass with a negative value? "
        messages.append({"role": "assistant", "content": answer + _FILLER * 2})
    return messages
