"""The model tiers, one module per vendor (Ollama, OpenAI-compatible servers, Anthropic):
each holds its program writer (a :class:`ModelProvider`) and its tool-calling chat (a
:class:`ToolChat` over it), on one base with the retry and stream policy. Replay answers
the agent loop from recorded conversations.
"""

from ._anthropic import AnthropicProvider, AnthropicToolChat
from ._base import (
    COMMON_KEYS,
    FALLBACK_MAX_TOKENS,
    GENERATION_KEYS,
    GenerationSettings,
    ModelProvider,
    Sampling,
    ToolChat,
)
from ._chat import (
    AssistantMessage,
    ChatRequest,
    Message,
    ModelTurn,
    OnText,
    ToolCall,
    ToolChatModel,
    ToolResult,
    ToolResults,
    ToolSchema,
    Usage,
    UserMessage,
    emit_text,
    parse_arguments,
)
from ._ollama import MUST_CALL_A_TOOL, OllamaProvider, OllamaToolChat
from ._openai import NO_KEY, OpenAIProvider, OpenAIToolChat
from ._plugins import MODEL_PLUGINS, TOOL_CHAT_PLUGINS, tool_chat_model
from ._policy import (
    POLICY_KEYS,
    REDACTED,
    RetryPolicy,
    default_describe,
    default_is_transient,
    iter_with_idle_timeout,
    redact,
    retry_after_seconds,
)
from ._replay import CONVERSATIONS_FILE, ReplayToolChat, record_conversation
from ._settings import check_settings

__all__ = [
    "COMMON_KEYS",
    "CONVERSATIONS_FILE",
    "FALLBACK_MAX_TOKENS",
    "GENERATION_KEYS",
    "MODEL_PLUGINS",
    "MUST_CALL_A_TOOL",
    "NO_KEY",
    "POLICY_KEYS",
    "REDACTED",
    "TOOL_CHAT_PLUGINS",
    "AnthropicProvider",
    "AnthropicToolChat",
    "AssistantMessage",
    "ChatRequest",
    "GenerationSettings",
    "Message",
    "ModelProvider",
    "ModelTurn",
    "OllamaProvider",
    "OllamaToolChat",
    "OnText",
    "OpenAIProvider",
    "OpenAIToolChat",
    "ReplayToolChat",
    "RetryPolicy",
    "Sampling",
    "ToolCall",
    "ToolChat",
    "ToolChatModel",
    "ToolResult",
    "ToolResults",
    "ToolSchema",
    "Usage",
    "UserMessage",
    "check_settings",
    "default_describe",
    "default_is_transient",
    "emit_text",
    "iter_with_idle_timeout",
    "parse_arguments",
    "record_conversation",
    "redact",
    "retry_after_seconds",
    "tool_chat_model",
]
