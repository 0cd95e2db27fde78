"""The OpenTelemetry names the DevTool reads meaning from: GenAI conventions (old and new) and OpenInference.

Both the Python mapping (`otlp_map.py`, for spans posted to the server) and the SQL one (the store's
OTLP file loader) take their names from here, so the two cannot disagree on a name. Where a field
has several sources they are tried in the order given: the latest GenAI name first, then the older
GenAI name (v1.36 and before, and what `OTEL_SEMCONV_STABILITY_OPT_IN` left out leaves in place),
then OpenInference's, then a framework's own (Pydantic AI's `tool_arguments`, `final_result`).
"""

from __future__ import annotations

from typing import Final

OPERATION: Final = "gen_ai.operation.name"
OPENINFERENCE_KIND: Final = "openinference.span.kind"

# What an operation or an OpenInference span kind becomes; anything else is a custom span.
OPERATION_KINDS: Final = {
    "invoke_agent": "agent",
    "chat": "turn",
    "text_completion": "turn",
    "generate_content": "turn",
    "execute_tool": "tools:execute",
}
OPENINFERENCE_KINDS: Final = {"AGENT": "agent", "LLM": "turn", "TOOL": "tools:execute"}
# Before `gen_ai.operation.name` (GenAI v1.26 and older), a model call was known by these alone.
MODEL_CALL_MARKERS: Final = ("gen_ai.system", "gen_ai.provider.name")
CUSTOM: Final = "custom:span"

AGENT_NAME: Final = ("gen_ai.agent.name", "agent.name")
TOOL_NAME: Final = ("gen_ai.tool.name", "tool.name")
TOOL_CALL_ID: Final = ("gen_ai.tool.call.id", "tool_call.id")
TOOL_ARGUMENTS: Final = ("gen_ai.tool.call.arguments", "tool_arguments", "input.value")
TOOL_RESULT: Final = ("gen_ai.tool.call.result", "tool_response", "output.value")
MODEL: Final = ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name")
PROVIDER: Final = ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
PROMPT_TOKENS: Final = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
COMPLETION_TOKENS: Final = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
)
TOTAL_TOKENS: Final = ("llm.token_count.total",)
CACHE_READ_TOKENS: Final = ("gen_ai.usage.cache_read.input_tokens", "llm.token_count.prompt_details.cache_read")
CACHE_WRITE_TOKENS: Final = ("gen_ai.usage.cache_creation.input_tokens", "llm.token_count.prompt_details.cache_write")
# Token counts outside 0..MAX_TOKENS are kept but not priced (a cost past 64 bits is no cost).
MAX_TOKENS: Final = 10**12
# Which model a request is priced as: the one that answered, else the one asked for.
PRICED_MODEL: Final = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
INPUT: Final = ("input.value",)
OUTPUT: Final = ("output.value",)
AGENT_OUTPUT: Final = ("output.value", "final_result")
ERROR_TYPE: Final = "error.type"

SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"

# OpenInference flattens messages into attributes: `llm.input_messages.3.message.role`, ...
OI_INPUT: Final = "llm.input_messages."
OI_OUTPUT: Final = "llm.output_messages."
OI_ROLE: Final = "message.role"
OI_CONTENT: Final = "message.content"
OI_CONTENTS: Final = "message.contents."
OI_CONTENT_TEXT: Final = "message_content.text"
OI_TOOL_CALLS: Final = "message.tool_calls."
OI_TOOL_CALL_ID: Final = "tool_call.id"
OI_TOOL_CALL_NAME: Final = "tool_call.function.name"
OI_TOOL_CALL_ARGUMENTS: Final = "tool_call.function.arguments"
OI_MESSAGE_TOOL_CALL_ID: Final = "message.tool_call_id"
# Flattened indexes above this are not read into messages (they stay in the span's attributes): a
# hostile `llm.input_messages.999999999.message.role` must not make a billion empty messages.
MAX_INDEX: Final = 999

# The GenAI conventions up to v1.36 sent each message as an event of its own.
MESSAGE_EVENTS: Final = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT: Final = "gen_ai.choice"
# The latest conventions' one event of a model call (sent as a log record when an instrumentation
# puts the messages in events, not on the span): it holds what the span's attributes would have.
OPERATION_DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
OPERATION_DETAILS: Final = ("gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages")
EXCEPTION_EVENT: Final = "exception"
EXCEPTION_TYPE: Final = "exception.type"
EXCEPTION_MESSAGE: Final = "exception.message"
EXCEPTION_STACK: Final = "exception.stacktrace"

# Text that JSON parsers disagree on (Python's and DuckDB's accept NaN and Infinity, strict JSON
# does not): a string attribute holding it is kept as text, not read as JSON, on both paths.
NON_JSON_WORDS: Final = r"\bNaN\b|\bInfinity\b"
