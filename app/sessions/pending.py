"""The ``pending_tokens`` rule of DESIGN 5, pure: which messages leave the keep window on append.

The counter on the agent-session row is the tokens of live messages that the next commit (with
the remembered ``keep_recent_count``) would archive. Appends keep it current in O(1) per message
with these functions; ``AgentSessionService.recompute_pending`` is the slow definition they must
always agree with. No I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def leaving_seqs(*, last_seq: int, archived_upto_seq: int, keep: int, count: int) -> list[int]:
    """Seqs of the messages that leave the keep window as ``count`` messages are appended.

    With ``keep`` 0 there is no window: every new message is pending at once (none "leaves").
    """
    if keep == 0:
        return []
    return [
        seq - keep
        for seq in range(last_seq + 1, last_seq + count + 1)
        if seq - archived_upto_seq > keep
    ]


def advance_pending(
    *,
    pending_tokens: int,
    last_seq: int,
    keep: int,
    leaving: Sequence[int],
    new_tokens: Sequence[int],
    stored_tokens: Mapping[int, int],
) -> int:
    """``pending_tokens`` after appending messages with ``new_tokens`` after ``last_seq``.

    keep 0: every new message is pending. Otherwise each message in ``leaving`` (from
    :func:`leaving_seqs`) becomes pending: a new one's tokens come from ``new_tokens``, an
    already stored one's from ``stored_tokens``.
    """
    if keep == 0:
        return pending_tokens + sum(new_tokens)
    for seq in leaving:
        pending_tokens += new_tokens[seq - last_seq - 1] if seq > last_seq else stored_tokens[seq]
    return pending_tokens
