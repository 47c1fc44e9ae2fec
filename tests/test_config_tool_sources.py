"""[tools.providers.NAME] in .lackpy/config.toml: every key checked at load, by file, line and key."""

from __future__ import annotations

import pytest

from lackpy_kernel.config import ConfigError, load_config


def write(tmp_path, text: str):
    folder = tmp_path / ".lackpy"
    folder.mkdir(exist_ok=True)
    path = folder / "config.toml"
    path.write_text(text)
    return path


def test_the_documented_sources_load_as_written(tmp_path):
    write(tmp_path, """
[tools.providers.mine]
plugin = "python"
path = "tools/mytools.py"              # or module = "pkg.mod"
grade = "read"

[tools.providers.github]
plugin = "mcp"
command = ["github-mcp-server", "stdio"]   # or url = "http://127.0.0.1:8765/mcp"
""")
    assert load_config(tmp_path).tool_providers == {
        "mine": {"plugin": "python", "path": "tools/mytools.py", "grade": "read"},
        "github": {"plugin": "mcp", "command": ["github-mcp-server", "stdio"]},
    }


def test_every_setting_of_a_source_and_of_one_tool(tmp_path):
    write(tmp_path, """
[tools.providers.mine]
plugin = "python"
module = "textkit.words"
functions = ["count_words", "fetch"]
grade = "read"
where = "child"

[tools.providers.mine.overrides.fetch]
grade = "write"
where = "kernel"

[tools.providers.gh]
plugin = "mcp"
url = "https://example.org/mcp"
headers = { Authorization = "Bearer ${GH_TOKEN}" }
tools = ["get-issue", "list-issues"]
prefix = "gh_"
timeout = 30
startup_timeout = 10.5

[tools.providers.gh.overrides.get-issue]
grade = "read"
timeout = 5

[tools.providers.local]
plugin = "mcp"
command = ["python", "server.py"]
env = { MODE = "test" }
cwd = "servers"
""")
    providers = load_config(tmp_path).tool_providers
    assert providers["mine"]["overrides"] == {"fetch": {"grade": "write", "where": "kernel"}}
    assert providers["gh"]["overrides"] == {"get-issue": {"grade": "read", "timeout": 5}}
    assert providers["gh"]["headers"] == {"Authorization": "Bearer ${GH_TOKEN}"}
    assert providers["local"]["env"] == {"MODE": "test"} and providers["local"]["cwd"] == "servers"


PYTHON = '[tools.providers.mine]\nplugin = "python"\npath = "t.py"\n'
MCP = '[tools.providers.gh]\nplugin = "mcp"\ncommand = ["srv"]\n'


@pytest.mark.parametrize(("text", "expected"), [
    ("[tools.providers]\nmine = 3\n", "line 2: [tools.providers.mine] must be a table"),
    ('[tools.providers.mine]\npath = "t.py"\n',
     'line 1: [tools.providers.mine] plugin must be "python" or "mcp", not None'),
    ('[tools.providers.mine]\nplugin = "ruby"\n',
     'line 2: [tools.providers.mine] plugin must be "python" or "mcp", not \'ruby\''),
    (PYTHON + 'grde = "read"\n',
     "line 4: [tools.providers.mine] unknown key 'grde' for a python source; did you mean "
     "'grade'?"),
    (PYTHON + 'command = ["x"]\n',
     "line 4: [tools.providers.mine] command is a setting of mcp sources, not python ones"),
    (MCP + 'where = "kernel"\n',
     "line 4: [tools.providers.gh] where is a setting of python sources, not mcp ones"),
    ('[tools.providers.mine]\nplugin = "python"\n',
     "[tools.providers.mine] a python source needs exactly one of module and path"),
    (PYTHON + 'module = "m"\n',
     "line 4: [tools.providers.mine] a python source needs exactly one of module and path"),
    (MCP + 'url = "http://x/mcp"\n',
     "line 4: [tools.providers.gh] a mcp source needs exactly one of command and url"),
    (PYTHON + 'grade = "admin"\n',
     'line 4: [tools.providers.mine] grade must be "read" or "write", not \'admin\''),
    (PYTHON + 'where = "cloud"\n',
     'line 4: [tools.providers.mine] where must be "child" or "kernel", not \'cloud\''),
    (PYTHON + 'functions = "count"\n',
     "line 4: [tools.providers.mine] functions must be a list, not 'count'"),
    (PYTHON + 'functions = ["a", 2]\n',
     "line 4: [tools.providers.mine] functions must list names (non-empty strings)"),
    ('[tools.providers.gh]\nplugin = "mcp"\ncommand = []\n',
     "line 3: [tools.providers.gh] command must name the server's program"),
    ('[tools.providers.gh]\nplugin = "mcp"\nurl = "ftp://x"\n',
     "line 3: [tools.providers.gh] url must start with http:// or https://, not 'ftp://x'"),
    (MCP + "timeout = 0\n", "line 4: [tools.providers.gh] timeout must be greater than 0, not 0"),
    (MCP + "startup_timeout = true\n",
     "line 4: [tools.providers.gh] startup_timeout must be an integer or a number, not True"),
    (MCP + "env = { A = 1 }\n", "line 4: [tools.providers.gh] env values must be strings"),
    (MCP + 'headers = "x"\n', "line 4: [tools.providers.gh] headers must be a table"),
    (MCP + 'prefix = "gh-"\n', "line 4: [tools.providers.gh] prefix must start a tool name"),
    (MCP + "tools = [1]\n", "line 4: [tools.providers.gh] tools must list names"),
    (MCP + 'cwd = 3\n', "line 4: [tools.providers.gh] cwd must be a string, not 3"),
    (MCP + "\n[tools.providers.gh.overrides.get-issue]\ngrade = 'wrte'\n",
     "line 6: [tools.providers.gh.overrides.get-issue] grade must be \"read\" or \"write\""),
    (MCP + "\n[tools.providers.gh.overrides.get-issue]\nwhere = 'kernel'\n",
     "line 6: [tools.providers.gh.overrides.get-issue] where is a setting of python tools, "
     "not mcp ones"),
    (MCP + "\n[tools.providers.gh.overrides.get-issue]\nprefix = 'x'\n",
     "line 6: [tools.providers.gh.overrides.get-issue] unknown key 'prefix' for one tool"),
    (MCP + "\n[tools.providers.gh.overrides]\nget-issue = 3\n",
     "[tools.providers.gh.overrides.get-issue] must be a table of grade, where, timeout"),
    ('[tools.providers.builtin]\nplugin = "mcp"\ncommand = ["x"]\n',
     "line 1: [tools.providers.builtin] 'builtin' is the built-in tools' name"),
])
def test_a_malformed_source_names_file_line_and_key(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert str(caught.value).startswith(f"{path}")
    assert expected in str(caught.value)


def test_the_line_is_the_one_in_the_sources_own_table(tmp_path):
    write(tmp_path, '[tools.providers.a]\nplugin = "python"\npath = "a.py"\ngrade = "read"\n\n'
                    '[tools.providers.b]\nplugin = "python"\npath = "b.py"\ngrade = "bad"\n')
    with pytest.raises(ConfigError, match="line 9: .tools.providers.b. grade must be"):
        load_config(tmp_path)
