"""``lackpy doctor``: a test per line it prints (a wall off, a tier unreachable or reachable,
an extra missing, a tool source broken, a config bad, the kernelspec missing or stale)."""

import importlib.metadata
import json
import subprocess
import sys
import time

import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

import lackpy_kernel.run.walls
from lackpy_kernel.cli import main
from tests.support.loopback import LoopbackServer, closed_port_url, json_reply, openai_answer, openai_error


def doctor(workspace, capsys, *options):
    """``lackpy doctor`` in ``workspace``: its exit status and its lines."""
    code = main(["doctor", "--workspace", str(workspace), *options])
    return code, capsys.readouterr().out.splitlines()


def line(lines, state, name):
    """The one line that reports ``name`` in ``state``."""
    found = [text for text in lines if text.startswith(f"  {state:4} {name} ")]
    assert len(found) == 1, "\n".join(lines)
    return found[0]


def config(workspace, text):
    (workspace / ".lackpy").mkdir(exist_ok=True)
    (workspace / ".lackpy" / "config.toml").write_text(text)


def test_a_fresh_folder_has_nothing_to_fix(tmp_path, capsys):
    code, lines = doctor(tmp_path, capsys)
    assert code == 0
    for heading in ("config", "walls", "extras", "tiers", "tool sources", "jupyter"):
        assert heading in lines
    assert "none: the defaults" in line(lines, "ok", ".lackpy/config.toml")
    assert line(lines, "ok", "rules").endswith("ready")
    assert "no templates yet" in line(lines, "off", "templates")
    assert "none configured" in line(lines, "off", "-")
    assert "acp " + importlib.metadata.version("agent-client-protocol") in line(lines, "ok", "acp")
    assert line(lines, "ok", "kibitzer").endswith(
        "kibitzer " + importlib.metadata.version("kibitzer"))
    assert lines[-1] == "nothing to fix"


def test_the_jupyter_ai_extra_names_its_client_and_the_persona(tmp_path, capsys):
    pytest.importorskip("jupyter_ai_acp_client", reason="the jupyter-ai extra is not installed")
    code, lines = doctor(tmp_path, capsys, "--json")
    [found] = [finding for finding in json.loads("\n".join(lines))["findings"]
               if finding["name"] == "jupyter-ai"]
    version = importlib.metadata.version("jupyter-ai-acp-client")
    assert found == {"section": "extras", "name": "jupyter-ai", "state": "ok",
                     "detail": f"jupyter_ai_acp_client {version}: the @lackpy chat persona "
                               "(lackpy_kernel.acp_server.persona)"}


def test_json_says_the_same(tmp_path, capsys):
    code, lines = doctor(tmp_path, capsys, "--json")
    report = json.loads("\n".join(lines))
    assert code == 0 and report["ok"] is True
    assert {"section": "tiers", "name": "rules", "state": "ok", "detail": "ready"} in report["findings"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux walls")
def test_a_wall_this_kernel_lacks_is_off_and_says_why(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(lackpy_kernel.run.walls, "landlock_abi", lambda: 0)
    code, lines = doctor(tmp_path, capsys)
    assert code == 0  # a machine's kernel is nothing the user must fix
    assert "this kernel has no Landlock" in line(lines, "off", "landlock filesystem")
    assert "needs Landlock ABI 4 (Linux 6.7)" in line(lines, "off", "landlock network")
    assert "only the file tools' own checks keep .lackpy/ and the tool sources' code" in \
        line(lines, "off", "landlock write")
    assert line(lines, "ok", "no_new_privs")


@pytest.mark.skipif(lackpy_kernel.run.walls.landlock_abi() < 1, reason="no Landlock here")
def test_the_write_wall_is_probed_and_says_what_a_program_writes(tmp_path, capsys):
    code, lines = doctor(tmp_path, capsys)
    assert code == 0
    assert "writes only its own staging folder (.lackpy/staging/<pid>/)" in line(
        lines, "ok", "landlock write")


@pytest.mark.skipif(lackpy_kernel.run.walls.landlock_abi() < 1, reason="no Landlock here")
def test_a_write_wall_that_does_not_hold_is_off_and_says_how(tmp_path, capsys, monkeypatch):
    """A kernel that takes the rulesets but does not enforce the write layer: the probe
    finds that a write to another stage went through."""
    monkeypatch.setattr(lackpy_kernel.run.walls, "_restrict_writes", lambda abi, folder: True)
    code, lines = doctor(tmp_path, capsys)
    assert code == 0
    assert "but in a walled process a file outside its stage could be written" in line(
        lines, "off", "landlock write")


def test_an_extra_not_installed_says_the_pip_command(tmp_path):
    blocked = ("import sys; sys.modules['temporalio'] = sys.modules['jupyter_console'] = None; "
               "sys.modules['acp'] = sys.modules['kibitzer'] = None; "
               "sys.modules['jupyter_ai_acp_client'] = None; "
               "from lackpy_kernel.cli import entry; entry(['doctor'])")
    done = subprocess.run([sys.executable, "-c", blocked], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert line(lines, "off", "temporal").endswith(
        "temporalio not installed: pip install 'lackpy-kernel[temporal]'")
    assert line(lines, "off", "lab").endswith(
        "jupyter_console not installed: pip install 'lackpy-kernel[lab]'")
    assert line(lines, "off", "acp").endswith("acp not installed: pip install 'lackpy-kernel[acp]'")
    assert line(lines, "off", "kibitzer").endswith(
        "kibitzer not installed: pip install 'lackpy-kernel[kibitzer]'")
    assert line(lines, "off", "jupyter-ai").endswith(
        "jupyter_ai_acp_client not installed: pip install 'lackpy-kernel[jupyter-ai]'")
    assert line(lines, "ok", "ollama")


@pytest.mark.parametrize("plugin, address, path", [
    ("ollama", "host", "/api/version"), ("openai", "base_url", "/v1/models")])
def test_a_tier_whose_server_is_down_is_unreachable_at_once(tmp_path, capsys, plugin, address, path):
    url = closed_port_url() + ("/v1" if plugin == "openai" else "")
    config(tmp_path, f'[inference]\norder = ["rules", "local"]\n'
                     f'[inference.providers.local]\nplugin = "{plugin}"\n{address} = "{url}"\n')
    start = time.monotonic()
    code, lines = doctor(tmp_path, capsys)
    assert time.monotonic() - start < 10
    assert code == 1
    assert f"unreachable: {url.removesuffix('/v1')}{path} (" in line(lines, "fix", "local")
    assert "take 'local' out of [inference] order" in line(lines, "fix", "local")
    assert lines[-1] == "1 thing to fix (the lines marked fix)"


@pytest.mark.parametrize("plugin, address, path", [
    ("ollama", "host", "/api/version"), ("openai", "base_url", "/v1/models")])
def test_a_tier_whose_server_answers_is_reachable(tmp_path, capsys, plugin, address, path):
    with LoopbackServer(json_reply({"version": "0.6.0", "data": []})) as server:
        url = server.url + ("/v1" if plugin == "openai" else "")
        config(tmp_path, f'[inference]\norder = ["local"]\n'
                         f'[inference.providers.local]\nplugin = "{plugin}"\n{address} = "{url}"\n')
        code, lines = doctor(tmp_path, capsys)
    assert code == 0
    assert line(lines, "ok", "local").endswith(f"reachable: {server.url}{path}")
    assert [(request.method, request.path) for request in server.requests] == [("GET", path)]


@pytest.mark.parametrize("answer, said", [
    (openai_answer("x"), ["; the lackpy grammar: taken"]),
    (openai_error(400, "Unrecognized request argument supplied: grammar"),
     ["; the lackpy grammar: refused: HTTP 400", "Unrecognized request argument supplied: grammar",
      "; programs are decoded without it (remove constrain, or use a server that takes llama.cpp's "
      "GBNF grammar)"]),
])
def test_a_tier_that_sends_the_grammar_says_whether_its_server_took_it(tmp_path, capsys, answer, said):
    with LoopbackServer(json_reply({"data": []})) as server:
        server.script(json_reply({"data": []}), answer)
        config(tmp_path, f'[inference]\norder = ["local"]\n[inference.providers.local]\n'
                         f'plugin = "openai"\nbase_url = "{server.url}/v1"\nraw = true\n'
                         'constrain = "grammar"\nmax_retries = 0\n')
        code, lines = doctor(tmp_path, capsys)
        probe = server.requests[1]
    assert code == 0
    found = line(lines, "ok", "local")
    assert f"reachable: {server.url}/v1/models; the lackpy grammar: " in found
    assert all(part in found for part in said) and found.endswith(said[-1])
    assert probe.path == "/v1/completions" and "grammar" in probe.json
    assert probe.json["max_tokens"] == 1


@pytest.mark.parametrize("status, state, detail", [
    (401, "ok", "reachable: {url}/api/version"),  # up, and asking for a key
    (404, "fix", "unreachable: {url}/api/version (HTTP 404 Not Found)")])
def test_a_server_that_answers_with_an_error(tmp_path, capsys, status, state, detail):
    with LoopbackServer(json_reply({"error": "no"}, status=status)) as server:
        config(tmp_path, f'[inference]\norder = ["local"]\n'
                         f'[inference.providers.local]\nplugin = "ollama"\nhost = "{server.url}"\n')
        code, lines = doctor(tmp_path, capsys)
    assert code == (state == "fix")
    assert detail.format(url=server.url) in line(lines, state, "local")


def test_a_tier_that_cannot_be_built_is_to_fix(tmp_path, capsys):
    config(tmp_path, '[inference]\norder = ["rules", "olama"]\n')
    code, lines = doctor(tmp_path, capsys)
    assert code == 1 and "unknown plugin 'olama'" in line(lines, "fix", "olama")


def test_an_api_key_tier_says_whether_its_key_is_set(tmp_path, capsys, monkeypatch):
    config(tmp_path, '[inference]\norder = ["claude"]\n'
                     '[inference.providers.claude]\nplugin = "anthropic"\n')
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code, lines = doctor(tmp_path, capsys)
    assert code == 1 and line(lines, "fix", "claude").endswith("ANTHROPIC_API_KEY is not set")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    code, lines = doctor(tmp_path, capsys)
    assert code == 0 and "key set; requests go to" in line(lines, "ok", "claude")


def test_a_broken_tool_source_is_to_fix(tmp_path, capsys):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "good.py").write_text('def shout(text: str) -> str:\n    """Louder."""\n'
                                                "    return text.upper()\n")
    config(tmp_path, '[tools.providers.good]\nplugin = "python"\npath = "tools/good.py"\n'
                     '[tools.providers.gone]\nplugin = "python"\npath = "tools/missing.py"\n')
    code, lines = doctor(tmp_path, capsys)
    assert code == 1
    assert "tools: shout" in line(lines, "ok", "good")
    assert "missing.py" in line(lines, "fix", "gone")


def test_a_bad_config_is_to_fix_and_names_the_key(tmp_path, capsys):
    config(tmp_path, "[sandbox]\ntimout = 3\n")
    code, lines = doctor(tmp_path, capsys)
    assert code == 1
    bad = line(lines, "fix", ".lackpy/config.toml")
    assert "timout" in bad and "line 2" in bad
    assert [text.split()[0] for text in lines if text.endswith("not checked: fix the config first")
            ] == ["off", "off"]  # the tiers and the tool sources


def test_no_kernelspec_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    def no_such(self, name):
        raise NoSuchKernel(name)

    monkeypatch.setattr(KernelSpecManager, "get_kernel_spec", no_such)
    code, lines = doctor(tmp_path, capsys)
    assert code == 0
    assert line(lines, "off", "kernelspec lackpy").endswith(
        "not installed (Jupyter cannot start the kernel): python -m lackpy_kernel install --sys-prefix")


def test_a_kernelspec_whose_python_is_gone_is_to_fix(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "jupyter" / "kernels" / "lackpy"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps(
        {"argv": [str(tmp_path / "gone" / "python"), "-m", "lackpy_kernel", "-f",
                  "{connection_file}"], "display_name": "lackpy", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    code, lines = doctor(tmp_path, capsys)
    assert code == 1
    assert "gone/python, which is gone" in line(lines, "fix", "kernelspec lackpy")
