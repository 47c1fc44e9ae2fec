"""Build the provider list from the configured order and provider tables."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lackpy_kernel.telemetry import USAGE_FILE

from ._provider import InferenceProvider
from .tiers import REPLAY_FILE, ReplayProvider, RulesProvider, TemplatesProvider

DETERMINISTIC_PLUGINS = ("templates", "rules", "replay")


class UnavailableProvider:
    """Stands in for a provider that could not be built; says why in ``providers`` listings."""

    def __init__(self, name: str, reason: str) -> None:
        self._name = name
        self.reason = reason

    @property
    def name(self) -> str:
        return self._name

    def available(self) -> bool:
        return False

    def unavailable_reason(self) -> str:
        return self.reason

    async def generate(self, intent: str, namespace_desc: str, config: dict[str, Any] | None = None,
                       error_feedback: list[str] | None = None) -> str | None:
        return None


def build_providers(
    order: list[str], tables: Mapping[str, Mapping[str, Any]], config_dir: Path
) -> list[InferenceProvider]:
    """One provider per name in ``order``: a table's ``plugin`` (default: the name) picks it."""
    return [build_provider(name, tables.get(name, {}), config_dir) for name in order]


def build_provider(name: str, settings: Mapping[str, Any], config_dir: Path) -> InferenceProvider:
    """The provider called ``name``; an UnavailableProvider when it cannot be made. A model
    tier records its calls in ``config_dir``'s usage record."""
    plugin = settings.get("plugin", name)
    if plugin == "templates":
        return TemplatesProvider(config_dir / "templates", name=name)
    if plugin == "rules":
        return RulesProvider(name=name)
    if plugin == "replay":
        return ReplayProvider(config_dir / settings.get("file", REPLAY_FILE), name=name)
    from .models import MODEL_PLUGINS  # the vendors load once a config names a plugin beyond the tiers

    if plugin not in MODEL_PLUGINS:
        known = ", ".join([*DETERMINISTIC_PLUGINS, *MODEL_PLUGINS])
        return UnavailableProvider(name, f"unknown plugin {plugin!r}; known plugins: {known}")
    try:
        provider = MODEL_PLUGINS[plugin].from_settings(name, dict(settings))
    except (ValueError, TypeError) as exc:
        return UnavailableProvider(name, f"bad settings in [inference.providers.{name}]: {exc}")
    provider.usage_file = config_dir / USAGE_FILE
    return provider
