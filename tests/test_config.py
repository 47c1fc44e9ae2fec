"""load_config and its error messages."""

import pytest

from lackpy_kernel.config import ConfigError, LackpyConfig, load_config


def write(tmp_path, text):
    folder = tmp_path / ".lackpy"
    folder.mkdir(exist_ok=True)
    (folder / "config.toml").write_text(text)
    return folder / "config.toml"


def test_defaults_without_a_file(tmp_path):
    config = load_config(tmp_path)
    assert config.inference_order == ["templates", "rules"]
    assert config.kit_default == "debug"
    assert config.sandbox_enabled is True
    assert (config.sandbox_timeout, config.sandbox_memory_mb) == (120.0, 512)


def test_the_documented_example(tmp_path):
    write(tmp_path, """
[inference]
order = ["templates", "rules", "ollama-local", "anthropic-fallback"]

[inference.providers.ollama-local]
plugin = "ollama"
host = "http://localhost:11434"
model = "qwen2.5-coder:1.5b"
temperature = 0.2
keep_alive = "30m"

[inference.providers.anthropic-fallback]
plugin = "anthropic"
model = "claude-haiku-4-5-20251001"

[kit]
default = "debug"

[sandbox]
enabled = true
timeout = 120
memory_mb = 512
""")
    config = load_config(tmp_path)
    assert config.inference_order == ["templates", "rules", "ollama-local", "anthropic-fallback"]
    assert config.inference_providers["ollama-local"]["temperature"] == 0.2
    assert config.inference_providers["anthropic-fallback"]["plugin"] == "anthropic"
    assert config.sandbox_timeout == 120.0


def test_builtin_tiers_are_always_first(tmp_path):
    write(tmp_path, '[inference]\norder = ["replay", "rules"]\nrecord = true\n')
    config = load_config(tmp_path)
    assert config.inference_order == ["templates", "rules", "replay"]
    assert config.inference_record is True


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[sandbox\n", "not valid TOML"),
        ("[sandbox]\ntimout = 3\n", "line 2: unknown key 'timout' in [sandbox]; did you mean 'timeout'?"),
        ("[sandbox]\ntimeout = 'slow'\n", "line 2: [sandbox] timeout must be an integer or a number"),
        ("[sandbox]\nmemory_mb = true\n", "line 2: [sandbox] memory_mb must be an integer"),
        ("[sandbox]\ntimeout = 0\n", "must be greater than 0"),
        ("[sandbox]\nworkers = 0\n", "line 2: [sandbox] workers must be greater than 0, not 0"),
        ("[sandbox]\nreuse_idle = -1\n", "line 2: [sandbox] reuse_idle must be greater than 0"),
        ("[sandbox]\nreuse_idle = '1m'\n", "line 2: [sandbox] reuse_idle must be an integer or a number"),
        ("\n[sandbx]\nenabled = true\n", "line 2: unknown section [sandbx]; did you mean 'sandbox'?"),
        ("[inference]\norder = 'rules'\n", "line 2: [inference] order must be a list"),
        ("[inference]\norder = [1]\n", "order must list names"),
        ("kit = 3\n", "'kit' must be a [kit] table"),
        ("[inference.providers]\nx = 1\n", "[inference.providers.x] must be a table"),
        ("[sandbox]\napprove = 'nevr'\n",
         "line 2: [sandbox] approve must be one of write, never, not 'nevr'; did you mean 'never'?"),
        ("[sandbox]\napprove = false\n", "line 2: [sandbox] approve must be a string"),
    ],
)
def test_malformed_files_name_file_line_and_key(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert str(path) in str(caught.value)
    assert expected in str(caught.value)


def test_unreadable_bytes_are_a_config_error(tmp_path):
    folder = tmp_path / ".lackpy"
    folder.mkdir()
    (folder / "config.toml").write_bytes(b"\xff\xfe[kit]")
    with pytest.raises(ConfigError, match="cannot be read"):
        load_config(tmp_path)


@pytest.mark.parametrize("value", ["[" * 5_000 + "]" * 5_000, "{a = " * 5_000 + "1" + "}" * 5_000])
def test_a_value_nested_past_the_parsers_depth_is_a_config_error(tmp_path, value):
    write(tmp_path, f"x = {value}\n")
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config(tmp_path)


def test_file_changes_wait_for_a_person_unless_the_config_opts_out(tmp_path):
    assert load_config(tmp_path).sandbox_approve == "write"
    write(tmp_path, '[sandbox]\napprove = "never"\n')
    assert load_config(tmp_path).sandbox_approve == "never"


def test_config_is_a_plain_dataclass():
    assert LackpyConfig().sandbox_max_result_mb == 64


def test_the_unused_inference_mode_key_is_refused_not_ignored(tmp_path):
    path = write(tmp_path, "[inference]\nmode = 'spm'\n")
    with pytest.raises(ConfigError, match=f"{path}, line 2: unknown key 'mode' in \\[inference\\]"):
        load_config(tmp_path)


def test_the_agent_section_names_the_model_and_provider_of_agent_magics(tmp_path):
    write(tmp_path, '[agent]\nmodel = "qwen2.5-coder:7b"\nprovider = "ollama-local"\n')
    config = load_config(tmp_path)
    assert (config.agent_model, config.agent_provider) == ("qwen2.5-coder:7b", "ollama-local")
    assert (LackpyConfig().agent_model, LackpyConfig().agent_provider) == (None, None)
    path = write(tmp_path, '[agent]\nmodle = "x"\n')
    with pytest.raises(ConfigError, match=f"{path}, line 2: unknown key 'modle' in \\[agent\\]; "
                                          f"did you mean 'model'"):
        load_config(tmp_path)
