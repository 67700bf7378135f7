"""The working-memory core: sections, tool schema, guards, merge, recovery, extractor, prompts.

Pure: standard library, jsonschema and tiktoken only; no I/O, clock or randomness, and nothing
from the rest of ``app``. Services call it with data and store what it returns.
"""

from app.wm.extractor import ExtractorConfig, extract_ops
from app.wm.guards import SENTINEL
from app.wm.items import Marker
from app.wm.merge import Decision, MergeResult, creation_ops, keep_all, merge
from app.wm.ops import OpKind, SectionOp
from app.wm.prompts import PROMPT_VERSION, batch_messages, create_prompt, update_prompt
from app.wm.reasons import Guard, Reason, RecoveryPath
from app.wm.recovery import Recovery, recover_arguments, recover_document
from app.wm.schema import CREATE_TOOL, UPDATE_TOOL
from app.wm.sections import SECTIONS, ExtraSection, ParsedDocument, Section, parse, render
from app.wm.thresholds import DEFAULT_CONFIG, GuardConfig, size_warnings
from app.wm.tokens import count_tokens, estimate_tokens, message_text, message_tokens

__all__ = [
    "CREATE_TOOL",
    "DEFAULT_CONFIG",
    "PROMPT_VERSION",
    "SECTIONS",
    "SENTINEL",
    "UPDATE_TOOL",
    "Decision",
    "ExtraSection",
    "ExtractorConfig",
    "Guard",
    "GuardConfig",
    "Marker",
    "MergeResult",
    "OpKind",
    "ParsedDocument",
    "Reason",
    "Recovery",
    "RecoveryPath",
    "Section",
    "SectionOp",
    "batch_messages",
    "count_tokens",
    "create_prompt",
    "creation_ops",
    "estimate_tokens",
    "extract_ops",
    "keep_all",
    "merge",
    "message_text",
    "message_tokens",
    "parse",
    "recover_arguments",
    "recover_document",
    "render",
    "size_warnings",
    "update_prompt",
]
