"""Which vendor a config's ``plugin`` names, for writing programs and for calling tools."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lackpy_kernel.errors import UsageError
from lackpy_kernel.telemetry import USAGE_FILE

from ._anthropic import AnthropicProvider
from ._base import ModelProvider
from ._chat import ToolChatModel
from ._ollama import OllamaProvider
from ._openai import OpenAIProvider
from ._replay import CONVERSATIONS_FILE, ReplayToolChat

MODEL_PLUGINS: dict[str, type[ModelProvider]] = {
    "ollama": OllamaProvider,
    "anthropic": AnthropicProvider,
    "openai": OpenAIProvider,
}
TOOL_CHAT_PLUGINS = ("anthropic", "ollama", "openai", "replay")


def tool_chat_model(plugin: str, name: str, settings: Mapping[str, Any], config_dir: Path
                    ) -> ToolChatModel:
    """The tool-calling model of ``plugin`` (anthropic, ollama, openai, replay) configured by
    ``settings`` (a ``[inference.providers.NAME]`` table, plus the engine's own knobs).

    Its calls are recorded in ``config_dir``'s usage record. Raises UsageError for an unknown
    plugin, settings the plugin refuses, or a client
    package that is not installed.
    """
    if plugin not in TOOL_CHAT_PLUGINS:
        raise UsageError(f"provider {name!r} uses the plugin {plugin!r}, which cannot call "
                         f"tools; tool-calling plugins: {', '.join(TOOL_CHAT_PLUGINS)}")
    if plugin == "replay":
        return ReplayToolChat(config_dir / str(settings.get("conversations", CONVERSATIONS_FILE)),
                              name=name, model=str(settings.get("model", "replay")))
    tier_class = MODEL_PLUGINS[plugin]
    try:
        importlib.import_module(tier_class.package)
    except ImportError:
        raise UsageError(f"provider {name!r} needs the {tier_class.package} package; install it with: "
                         f"pip install 'lackpy-kernel[{tier_class.extra}]'") from None
    tier_settings = {key: value for key, value in settings.items() if key != "conversations"}
    try:
        tier = tier_class.from_settings(name, tier_settings)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"provider {name!r}: {exc}") from None
    tier.usage_file = config_dir / USAGE_FILE
    return tier.tool_chat()
