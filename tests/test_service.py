"""LackpyService end to end: kits, validation, the tiers, the ratchet, sandboxed runs."""

import inspect
import json
import os

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.errors import UnknownKitError
from lackpy_kernel.kit import workspace_kits_dir, write_kit_file
from lackpy_kernel.lang import no_loops
from lackpy_kernel.service import LackpyService


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / "mod.py").write_text("def main():\n    helper()\n\ndef helper():\n    pass\n")
    (tmp_path / ".lackpy").mkdir()  # these tests write files with no one to ask
    (tmp_path / ".lackpy" / "config.toml").write_text('[sandbox]\napprove = "never"\n')
    return tmp_path


@pytest.fixture
def service(workspace):
    with LackpyService(workspace) as svc:
        yield svc


# LackpyService's parameters as the seed documents them (002), in its order.
SEED_PARAMETERS = {
    "__init__": ["workspace", "config"],
    "validate": ["program", "kit", "rules", "param_names", "extra_tools"],
    "generate": ["intent", "kit", "params", "rules", "mode", "interpreter", "extra_tools"],
    "run_program": ["program", "kit", "params", "sandbox", "rules", "extra_tools"],
    "delegate": ["intent", "kit", "params", "sandbox", "rules", "_program_override", "mode",
                 "interpreter", "extra_tools"],
    "create": ["program", "kit", "name", "pattern", "extra_tools"],
    "kit_info": ["kit", "extra_tools"],
    "kit_list": [],
    "kit_create": ["name", "tools", "description"],
    "toolbox_list": [],
    "docs_index": ["kit", "extra_tools"],
    "resolve_doc": ["doc_path"],
}


@pytest.mark.parametrize("method", SEED_PARAMETERS)
def test_the_seeds_parameters_stay_positional_and_what_was_added_is_keyword_only(method):
    parameters = list(inspect.signature(getattr(LackpyService, method)).parameters.values())[1:]
    positional = [p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional == SEED_PARAMETERS[method]
    assert all(p.kind is p.KEYWORD_ONLY for p in parameters if p.name not in positional)


class Echo:
    """A custom provider, inserted the way the lackpy docs show."""

    name = "echo"

    def available(self):
        return True

    async def generate(self, intent, namespace_desc, config=None, error_feedback=None):
        return "lines = read_file('notes.txt').splitlines()\nlen(lines)"


async def test_delegate_through_rules(service):
    result = await service.delegate("read the file notes.txt", kit="read_file")
    assert result["success"], result["error"]
    assert result["generation_tier"] == "rules"
    assert result["output"] == "alpha\nbeta\n"
    assert result["files_read"] == ["notes.txt"]
    assert result["grade"] == {"w": 1, "d": 1}
    assert result["trace"][0]["tool"] == "read_file"
    for key in ("generation_time_ms", "execution_time_ms", "total_time_ms", "files_modified"):
        assert key in result


async def test_the_ratchet(service):
    first = await service.delegate("read the file notes.txt", kit="read_file")
    assert first["generation_tier"] == "rules"
    saved = await service.create(first["program"], kit="read_file", name="read-notes")
    assert saved["success"], saved
    assert saved["pattern"] == "read the file notes.txt"
    again = await service.delegate("read the file notes.txt", kit="read_file")
    assert again["generation_tier"] == "templates"
    assert again["output"] == first["output"]
    listing = service.templates_list()["templates"]
    assert listing[0]["name"] == "read-notes" and listing[0]["success_count"] == 1


async def test_create_with_a_pattern_generalises(service, workspace):
    program = "content = read_file('{path}')\ncontent"
    saved = await service.create(program, kit="read_file", name="reader",
                                 pattern="show me {path}")
    assert saved["success"], saved
    result = await service.delegate("show me mod.py", kit="read_file")
    assert result["generation_tier"] == "templates"
    assert result["output"].startswith("def main()")


async def test_create_without_pattern_or_history_asks_for_one(service):
    saved = await service.create("x = read_file('a')", kit="read_file", name="t")
    assert not saved["success"]
    assert "pattern" in saved["errors"][0]


async def test_create_refuses_invalid_programs_and_names(service):
    bad = await service.create("import os", kit="read_file", name="t", pattern="p")
    assert not bad["success"] and "Import" in bad["errors"][0]
    assert bad["valid"] is False  # the program, not the name, is what is wrong
    for name in ("../evil", "a/b", ""):
        refused = await service.create("1", kit="read_file", name=name, pattern="p")
        assert not refused["success"] and "invalid template name" in refused["errors"][0]
        assert "valid" not in refused


async def test_custom_provider_via_the_documented_list(service):
    service._inference_providers.insert(2, Echo())
    assert service.inference_providers is service._inference_providers
    result = await service.delegate("count the lines of notes", kit=["read_file"])
    assert result["generation_tier"] == "echo"
    assert result["output"] == 2


async def test_generate_failure_lists_the_tiers(service):
    with pytest.raises(RuntimeError, match="rules: no program"):
        await service.generate("summarise everything", kit="debug")


async def test_run_program_in_the_sandbox_and_in_process(service):
    program = "defs = find_definitions('helper')\n[d['line'] for d in defs]"
    sandboxed = await service.run_program(program)
    in_process = await service.run_program(program, sandbox=False)
    assert sandboxed.output == in_process.output == [4]
    assert service.sandbox_worker_pid is not None


@pytest.mark.parametrize("last, written", [("read_file('missing.txt')", False), ("1", True)])
async def test_run_program_is_atomic_for_files(service, workspace, last, written):
    program = f"write_file('one.txt', '1')\nwrite_file('sub/two.txt', '2')\n{last}"
    result = await service.run_program(program, ["read_file", "write_file"])
    assert result.success is written
    assert result.trace.files_modified == ["one.txt", "sub/two.txt"]
    assert (workspace / "one.txt").exists() is written
    assert (workspace / "sub" / "two.txt").exists() is written


async def test_run_program_validates_first_with_rules(service):
    result = await service.run_program("for x in find_files('*'):\n    print(x)", rules=[no_loops])
    assert not result.success
    assert result.error_type == "LackpyValidationError"
    assert "loops are not allowed" in result.error


async def test_run_program_respects_the_sandbox_setting(workspace):
    config = LackpyConfig(sandbox_enabled=False)
    with LackpyService(workspace, config) as svc:
        result = await svc.run_program("1 + 1")
        assert result.output == 2
        assert svc.sandbox_worker_pid is None  # no worker was started


async def test_run_program_with_params(service):
    result = await service.run_program("read_file(name).upper()", params={"name": "notes.txt"})
    assert result.output == "ALPHA\nBETA\n"


async def test_record_then_replay(workspace):
    record = LackpyConfig(inference_record=True)
    with LackpyService(workspace, record) as svc:
        svc.inference_providers.append(Echo())
        await svc.delegate("count the lines of notes", kit="read_file")
    lines = (workspace / ".lackpy" / "replay.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["provider"] == "echo"
    replay = LackpyConfig(inference_order=["templates", "rules", "replay"])
    with LackpyService(workspace, replay) as svc:
        result = await svc.delegate("count the lines of notes", kit="read_file")
    assert result["generation_tier"] == "replay"
    assert result["output"] == 2


def test_kits(service, workspace):
    assert [kit["name"] for kit in service.kit_list()] == ["debug"]
    made = service.kit_create("mine", ["read_file", "write_file"], "mine")
    assert made["path"].endswith("mine.kit")
    info = service.kit_info("mine")
    assert list(info["tools"]) == ["read_file", "write_file"]
    assert info["grade"] == {"w": 3, "d": 3}
    assert {kit["name"]: kit["source"] for kit in service.kit_list()} == {
        "debug": "shipped", "mine": "workspace"}
    with pytest.raises(KeyError, match="read_fil"):
        service.kit_create("bad", ["read_fil"])


async def test_a_service_finds_kits_in_its_workspace_not_the_current_directory(
        workspace, tmp_path_factory, monkeypatch):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    write_kit_file(workspace_kits_dir(workspace) / "mine.kit", "mine", ["read_file"])
    write_kit_file(workspace_kits_dir(elsewhere) / "theirs.kit", "theirs", ["write_file"])
    monkeypatch.chdir(elsewhere)
    with LackpyService(workspace) as service:
        assert list(service.resolve_kit("mine").tools) == ["read_file"]
        assert [kit["name"] for kit in service.kit_list()] == ["debug", "mine"]
        with pytest.raises(UnknownKitError, match="no kit named 'theirs'"):
            service.kit_info("theirs")
        result = await service.run_program("read_file('notes.txt')", kit="mine")
        assert result.success and result.output == "alpha\nbeta\n"


def test_an_unknown_kit_name_raises_file_not_found_error(service):
    """The seed (002, kit_info and resolve_kit): a named kit file that does not exist is a
    FileNotFoundError; it is also a LookupError, as every KitError."""
    for ask in (service.kit_info, service.resolve_kit):
        with pytest.raises(FileNotFoundError, match="no kit named 'nosuch'") as caught:
            ask("nosuch")
        assert isinstance(caught.value, LookupError)


@pytest.mark.parametrize("sandbox", [True, False])
async def test_sort_by_sorts_by_a_key_lambda_as_the_seed_grammar_allows(service, sandbox):
    program = "rows = [{'a': 2}, {'a': 3}, {'a': 1}]\nsort_by(rows, key=lambda r: -r['a'])"
    result = await service.run_program(program, kit=[], sandbox=sandbox)
    assert result.success, result.error
    assert result.output == [{"a": 3}, {"a": 2}, {"a": 1}]


def test_validate_with_kit_forms(service):
    assert service.validate("read_file('a')", kit="read_file").valid
    assert service.validate("rf('a')", kit={"rf": "read_file"}).valid
    assert not service.validate("write_file('a', 'b')").valid  # debug kit is read-only
    assert service.validate("n + 1", kit="debug", param_names=["n"]).valid
    assert not service.validate("read_file = 1", kit="read_file").valid


def test_docs(service):
    index = service.docs_index("debug")
    doc = service.resolve_doc(index["tool_docs"]["read_file"])
    assert doc and "read_file" in doc
    assert service.resolve_doc("notes.txt") == "alpha\nbeta\n"
    assert service.resolve_doc("../outside.txt") is None
    assert service.resolve_doc("/etc/passwd") is None
    assert service.resolve_doc("missing.md") is None


def test_a_doc_that_is_a_hard_link_to_a_file_outside_is_not_read(service, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "secret.md"
    outside.write_text("TOP-SECRET")
    os.link(outside, service.workspace / "guide.md")
    assert service.resolve_doc("guide.md") is None


def test_toolbox_and_providers(service):
    names = [tool["name"] for tool in service.toolbox_list()]
    assert names[:2] == ["read_file", "find_files"] and "write_file" in names
    providers = service.providers_list()
    assert [p["name"] for p in providers] == ["templates", "rules"]
    assert providers[0]["available"] is False and "no templates" in providers[0]["reason"]
    assert providers[1]["available"] is True


def test_unknown_plugin_is_listed_with_the_reason(workspace):
    config = LackpyConfig(inference_order=["templates", "rules", "mystery"],
                          inference_providers={"mystery": {"plugin": "gpt9"}})
    with LackpyService(workspace, config) as svc:
        listing = {p["name"]: p for p in svc.providers_list()}
    assert "unknown plugin 'gpt9'" in listing["mystery"]["reason"]


async def test_a_tool_registered_from_python_runs_here_for_a_program_in_the_sandbox(service):
    from lackpy_kernel.kit import ToolSpec
    from lackpy_kernel.session import LackpySession

    callers = []

    def shout(text):
        callers.append(os.getpid())
        return text.upper()

    service.toolbox.register_tool(ToolSpec("shout", "custom"), shout)
    session = LackpySession(service, "read_file")
    assert (await session.run("x = read_file('notes.txt')")).success
    result = await session.run("y = shout(x)\ny", kit=["shout"])
    assert result.output == "ALPHA\nBETA\n" and callers == [os.getpid()]
    assert [(entry.tool, entry.source) for entry in result.trace.entries] == [("shout", "custom")]
    assert (await session.run("len(x) + len(y)")).output == 22
    assert session.variable_types == {"x": "str", "y": "str"}  # held by the sandbox worker
    assert service.notices == []  # no "runs without the sandbox's limits" any more
    session.close()


async def test_an_inference_mode_other_than_one_shot_is_refused(service):
    from lackpy_kernel.errors import UsageError

    with pytest.raises(UsageError, match="inference mode 'spm' is not supported"):
        await service.generate("read the file notes.txt", kit="read_file", mode="spm")
    with pytest.raises(UsageError, match="inference mode 'spm'"):
        await service.delegate("read the file notes.txt", kit="read_file", mode="spm")
    written = await service.generate("read the file notes.txt", kit="read_file", mode="1-shot")
    assert written.provider_name == "rules"


async def test_the_rules_tier_sees_the_kits_tools_not_the_parameters(service):
    """A parameter named like a tool is no tool: the rules tier must not write a call to it."""
    with pytest.raises(RuntimeError, match="rules: no program"):
        await service.generate("read the file notes.txt", kit=["find_files"],
                               params={"read_file": "x"})
    written = await service.generate("read the file notes.txt", kit=["read_file"])
    assert written.provider_name == "rules"
