"""Items of every kind the Agents SDK's Runner can put in a session, as the SDK shapes them
(Responses API input items), with text in several scripts: the fixtures of the session tests."""

from __future__ import annotations

from typing import Any

UNICODE = "Zoë’s café — 日本語 — עברית — 🚀 👩‍👩‍👧 — e\u0301"

USER_TEXT: Any = {"role": "user", "content": f"Book a seat. {UNICODE}"}
USER_PARTS: Any = {
    "type": "message",
    "role": "user",
    "content": [
        {"type": "input_text", "text": "Here is my ticket and a photo."},
        {"type": "input_image", "image_url": "https://example.com/seat.png", "detail": "low"},
        {"type": "input_image", "file_id": "file_img", "detail": "auto"},
        {"type": "input_file", "file_id": "file_ticket", "filename": "ticket.pdf"},
        {
            "type": "input_file",
            "file_data": "data:application/pdf;base64,JVBERi0=",
            "filename": "b.pdf",
        },
    ],
}
SYSTEM: Any = {"role": "system", "content": "You book trips."}
DEVELOPER: Any = {
    "role": "developer",
    "content": [{"type": "input_text", "text": "Be terse."}],
}
ASSISTANT_OUTPUT: Any = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": f"Booked. {UNICODE}", "annotations": []}],
}
ASSISTANT_PARTS: Any = {
    "type": "message",
    "role": "assistant",
    "content": [
        {"type": "output_text", "text": "Part one. ", "annotations": [], "logprobs": []},
        {"type": "refusal", "refusal": "I cannot share the PNR."},
        {"type": "output_text", "text": "Part two.", "annotations": []},
    ],
}
ASSISTANT_EASY: Any = {"role": "assistant", "content": "Plain text reply."}
REASONING: Any = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "The user wants a window seat."}],
    "encrypted_content": "gAAAAB-opaque",
}
CALL: Any = {
    "id": "fc_1",
    "type": "function_call",
    "call_id": "call_1",
    "name": "seat_map",
    "arguments": '{"flight": "UA123"}',
    "status": "completed",
}
CALL_2: Any = {
    "type": "function_call",
    "call_id": "call_2",
    "name": "weather",
    "arguments": '{"city": "Lisboa"}',
}
OUTPUT: Any = {
    "type": "function_call_output",
    "call_id": "call_1",
    "output": f"12A window {UNICODE}",
}
OUTPUT_PARTS: Any = {
    "type": "function_call_output",
    "call_id": "call_2",
    "output": [
        {"type": "input_text", "text": "Sunny, 24°C"},
        {"type": "input_image", "image_url": "https://example.com/sun.png", "detail": "auto"},
    ],
}
WEB_SEARCH: Any = {
    "id": "ws_1",
    "type": "web_search_call",
    "status": "completed",
    "action": {"type": "search", "query": "UA123 status"},
}
FILE_SEARCH: Any = {
    "id": "fs_1",
    "type": "file_search_call",
    "status": "completed",
    "queries": ["baggage policy"],
    "results": [{"file_id": "file_1", "filename": "policy.md", "score": 0.9, "text": "23 kg"}],
}
COMPUTER_CALL: Any = {
    "id": "cu_1",
    "type": "computer_call",
    "call_id": "computer_1",
    "status": "completed",
    "action": {"type": "click", "button": "left", "x": 10, "y": 20},
    "pending_safety_checks": [],
}
COMPUTER_OUTPUT: Any = {
    "type": "computer_call_output",
    "call_id": "computer_1",
    "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBORw0="},
}
MCP_LIST_TOOLS: Any = {
    "id": "mcpl_1",
    "type": "mcp_list_tools",
    "server_label": "calendar",
    "tools": [{"name": "free_slots", "input_schema": {"type": "object"}}],
}
MCP_CALL: Any = {
    "id": "mcp_1",
    "type": "mcp_call",
    "server_label": "calendar",
    "name": "free_slots",
    "arguments": "{}",
    "output": "Tue 10:00",
}
IMAGE_GENERATION: Any = {
    "id": "ig_1",
    "type": "image_generation_call",
    "status": "completed",
    "result": "iVBORw0KGgo=",
}
CODE_INTERPRETER: Any = {
    "id": "ci_1",
    "type": "code_interpreter_call",
    "status": "completed",
    "code": "print(6 * 7)",
    "container_id": "cntr_1",
    "outputs": [{"type": "logs", "logs": "42"}],
}
CUSTOM_CALL: Any = {
    "type": "custom_tool_call",
    "call_id": "custom_1",
    "name": "grammar",
    "input": "fix: teh cat",
}
CUSTOM_OUTPUT: Any = {
    "type": "custom_tool_call_output",
    "call_id": "custom_1",
    "output": "the cat",
}
REFERENCE: Any = {"type": "item_reference", "id": "msg_0"}
APPROVAL_REQUEST: Any = {
    "id": "mcpr_1",
    "type": "mcp_approval_request",
    "server_label": "calendar",
    "name": "book_slot",
    "arguments": '{"slot": "Tue 10:00"}',
}
APPROVAL_RESPONSE: Any = {
    "type": "mcp_approval_response",
    "approval_request_id": "mcpr_1",
    "approve": True,
}
SHELL_CALL: Any = {
    "id": "lsh_1",
    "type": "local_shell_call",
    "call_id": "shell_1",
    "status": "completed",
    "action": {"type": "exec", "command": ["ls", "-la"], "env": {}},
}
SHELL_OUTPUT: Any = {"id": "lsho_1", "type": "local_shell_call_output", "output": "total 0"}
COMPACTION: Any = {"type": "compaction", "encrypted_content": "gAAAAB-compacted"}

EVERY_KIND: list[Any] = [
    SYSTEM,
    DEVELOPER,
    USER_TEXT,
    USER_PARTS,
    REASONING,
    CALL,
    CALL_2,
    OUTPUT,
    OUTPUT_PARTS,
    WEB_SEARCH,
    FILE_SEARCH,
    ASSISTANT_OUTPUT,
    COMPUTER_CALL,
    COMPUTER_OUTPUT,
    MCP_LIST_TOOLS,
    MCP_CALL,
    IMAGE_GENERATION,
    CODE_INTERPRETER,
    CUSTOM_CALL,
    CUSTOM_OUTPUT,
    ASSISTANT_PARTS,
    APPROVAL_REQUEST,
    APPROVAL_RESPONSE,
    SHELL_CALL,
    SHELL_OUTPUT,
    COMPACTION,
    REFERENCE,
    ASSISTANT_EASY,
]
"""A conversation holding every kind, in an order the Runner could produce (every function
call answered)."""
