"""Which provider serves a model string: aliases, rules, the default, and providers named in
the workspace's config."""

from __future__ import annotations

import threading

import pytest

from lackpy_kernel.engines import Agent, LLMEngine
from lackpy_kernel.errors import UsageError
from tests.support import agents
from tests.support import loopback as lb


@pytest.fixture(autouse=True)
def routing_restored(model_env):
    """Each test starts from the built-in routing and leaves it so."""
    saved = (LLMEngine._PROVIDER_ALIASES, LLMEngine._USER_RULES, LLMEngine._DEFAULT_PROVIDER)
    yield
    LLMEngine._PROVIDER_ALIASES, LLMEngine._USER_RULES, LLMEngine._DEFAULT_PROVIDER = saved


@pytest.mark.parametrize(("model", "provider"), [
    ("claude-haiku-4-5-20251001", "anthropic"),
    ("gpt-4o-mini", "openai"),
    ("o3-mini", "openai"),
    ("qwen2.5-coder:7b", "ollama"),
    ("claude", "anthropic"),
    ("some-unknown-model", "anthropic"),  # the default provider
])
def test_built_in_routing(model, provider, workspace):
    engine = LLMEngine(model, workspace=workspace)
    assert engine.provider == provider and engine.plugin == provider


def test_an_alias_keeps_the_providers_own_default_model(workspace):
    assert LLMEngine("claude", workspace=workspace).chat.model.startswith("claude-")
    assert LLMEngine("claude-opus-4-7", workspace=workspace).chat.model == "claude-opus-4-7"


def test_with_no_default_provider_an_unknown_model_fails_at_construction(workspace):
    LLMEngine.set_default_provider(None)
    with pytest.raises(UsageError, match="no provider serves the model 'grok-2'"):
        LLMEngine("grok-2", workspace=workspace)
    assert LLMEngine("gpt-4o", workspace=workspace).provider == "openai"


def test_a_registered_rule_wins_over_the_built_in_ones(workspace):
    LLMEngine.register_provider_rule("claude-local", "ollama", kind="startswith")
    assert LLMEngine("claude-local-7b", workspace=workspace).provider == "ollama"
    assert LLMEngine("claude-haiku-4-5", workspace=workspace).provider == "anthropic"
    LLMEngine.register_provider_rule("mistral", "ollama")
    assert LLMEngine("open-mistral-nemo", workspace=workspace).provider == "ollama"
    with pytest.raises(UsageError, match="did you mean 'contains' or 'startswith'"):
        LLMEngine.register_provider_rule("x", "ollama", kind="endswith")


def test_a_registered_alias_routes_exactly(workspace):
    LLMEngine.register_provider_alias("house-model", "openai")
    assert LLMEngine("house-model", workspace=workspace).provider == "openai"
    assert "house-model" in LLMEngine.provider_aliases()
    LLMEngine.provider_aliases()["claude"] = "openai"  # a copy: routing is unchanged
    assert LLMEngine("claude", workspace=workspace).provider == "anthropic"


def test_registrations_from_many_threads_are_all_kept(workspace):
    def register(number: int) -> None:
        LLMEngine.register_provider_alias(f"model-{number}", "ollama")
        LLMEngine.register_provider_rule(f"family-{number}-", "openai", kind="startswith")

    threads = [threading.Thread(target=register, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(f"model-{n}" in LLMEngine.provider_aliases() for n in range(20))
    assert all(LLMEngine.route(f"family-{n}-x") == "openai" for n in range(20))


def test_a_provider_named_in_the_config_brings_its_host_and_settings(model_server, service,
                                                                   workspace):
    agents.write_config(workspace, "ollama", model_server, model="qwen2.5-coder:7b",
                        max_retries=1, retry_delay=0.001)
    model_server.script(lb.tool_error("ollama", 503, "loading"), lb.tool_turn("ollama", "hi"))
    engine = LLMEngine("qwen2.5-coder:7b", provider="loop", workspace=workspace)
    assert engine.provider == "loop" and engine.plugin == "ollama"
    assert Agent(engine, tools=[], service=service).run("say hi").payload == "hi"
    assert [r.path for r in model_server.requests] == ["/api/chat", "/api/chat"]


def test_an_unknown_provider_name_says_what_exists(model_server, workspace):
    agents.write_config(workspace, "ollama", model_server)
    with pytest.raises(UsageError, match="no provider 'lop'.*did you mean 'loop'"):
        LLMEngine("m", provider="lop", workspace=workspace)


def test_a_provider_whose_plugin_cannot_call_tools_is_refused(workspace):
    (workspace / ".lackpy").mkdir(exist_ok=True)
    (workspace / ".lackpy" / "config.toml").write_text(
        '[inference.providers.tmpl]\nplugin = "templates"\n')
    with pytest.raises(UsageError, match="plugin 'templates', which cannot call tools"):
        LLMEngine("m", provider="tmpl", workspace=workspace)


def test_bad_settings_of_a_configured_provider_are_named(model_server, workspace):
    agents.write_config(workspace, "anthropic", model_server, max_retries=-1)
    with pytest.raises(UsageError, match="provider 'loop': max_retries must be >= 0"):
        LLMEngine("m", provider="loop", workspace=workspace)


def test_an_agent_can_be_given_a_model_string(workspace, service):
    agent = Agent("qwen2.5-coder:7b", tools=[], service=service)
    assert isinstance(agent.engine, LLMEngine) and agent.engine.provider == "ollama"
