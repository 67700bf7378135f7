"""The op objects the extractor's section rules return, as ``update_working_memory`` arguments.

Owns their JSON shape (what a model would send). Never validates or applies an op: the merge
reads them exactly as it reads a model's arguments.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.wm.ops import OpKind


def keep_op() -> dict[str, object]:
    return {"op": OpKind.KEEP.value}


def update_op(content: str) -> dict[str, object]:
    return {"op": OpKind.UPDATE.value, "content": content}


def append_op(items: Iterable[str]) -> dict[str, object]:
    return {"op": OpKind.APPEND.value, "items": list(items)}
