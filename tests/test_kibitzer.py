"""Kibitzer (the kibitzer extra), with the real package: a mode that forbids writes refuses a
program's file changes at the commit with Kibitzer's reason wherever the program runs, and
nothing asks it from the program's process; it hears of
generations and its hints reach the prompt and the correction chain; it watches an agent's
tool calls as it does programs; the seed's
``kibitzer_session`` parameters; ``%kibitzer`` on both hosts; and a Kibitzer that raises or
hangs never breaks a cell."""

from __future__ import annotations

import inspect
import json
import threading
import time

import pytest
from kibitzer import KibitzerSession

from lackpy_kernel import kibitzer
from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.engines import Agent, LLMEngine
from lackpy_kernel.errors import GenerationError
from lackpy_kernel.infer import InferenceDispatcher
from lackpy_kernel.kit import ArgSpec, ToolSpec, builtin_toolbox, resolve_kit
from lackpy_kernel.run import RestrictedRunner, Trace, make_traced
from lackpy_kernel.service import LackpyService
from lackpy_kernel.session import LackpySession
from tests.support import agents
from tests.support import loopback as lb
from tests.support.hosts import Host, host_with
from tests.support.kernel import make_workspace

KIT = ["read_file", "write_file"]
WRITE = 'name = "out" + ".txt"\nwrite_file(name, read_file("notes.txt"))'  # a path known as it runs
REFUSED = "Kibitzer (explore mode) refused the program's file changes: Current mode is read-only"
ASKED_AT_THE_CALL = "Kibitzer (explore mode) refused write_file(): Current mode is read-only"
FIVE_READS = "[read_file('notes.txt') for i in range(5)]"
SEQUENTIAL_READS = "[kibitzer] You've read 5 files one at a time."


def kibitzer_workspace(folder, mode: str | None = "explore"):
    config = f'[kibitzer]\nmode = "{mode}"\n\n' if mode else ""
    return make_workspace(folder, config + '[sandbox]\napprove = "never"\ntimeout = 30\n')


@pytest.fixture
def explore(tmp_path):
    return kibitzer_workspace(tmp_path)


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "in-process"])
async def test_a_mode_that_forbids_writes_refuses_the_programs_changes_with_kibitzers_reason(
        explore, sandbox):
    with LackpyService(explore) as service:
        result = await service.run_program(WRITE, KIT, sandbox=sandbox)
    assert not result.success and result.error_type == "ChangeRefusedError"
    assert result.error.startswith("the program's changes to out.txt were not applied: ")
    assert REFUSED in result.error and "(tried to write: out.txt)" in result.error
    # the calls ran (the write staged) and the trace says so, wherever the program ran
    assert [(call.tool, call.success) for call in result.trace.entries] == [
        ("read_file", True), ("write_file", True)]
    assert not (explore / "out.txt").exists()


async def test_a_mode_lets_a_program_write_where_it_says(tmp_path):
    workspace = kibitzer_workspace(tmp_path, "implement")  # Kibitzer's: src/, tests/, ...
    with LackpyService(workspace) as service:
        done = await service.run_program('write_file("src/" + "a.py", "x = 1\\n")', KIT)
        refused = await service.run_program('write_file("doc" + ".txt", "x")', KIT)
    assert done.success, done.error
    assert (workspace / "src" / "a.py").read_text() == "x = 1\n"
    assert "Kibitzer (implement mode) refused the program's file changes" in refused.error
    assert not (workspace / "doc.txt").exists()


async def test_a_program_writing_a_literal_path_is_refused_before_it_runs(explore):
    with LackpyService(explore) as service:
        result = await service.run_program('n = read_file("notes.txt")\nwrite_file("o.txt", n)',
                                           KIT)
    assert result.error_type == "ToolCallError"
    assert result.error.startswith("Kibitzer (explore mode) refused the program: ")
    assert result.trace.entries == []  # nothing ran, not even the read


async def test_a_session_keeps_its_variables_when_kibitzer_refuses_a_call(explore):
    with LackpyService(explore) as service:
        session = LackpySession(service, KIT)
        try:
            assert (await session.run("x = 1")).success
            refused = await session.run("x = 2\n" + WRITE)
            assert REFUSED in refused.error
            assert (await session.run("x")).output == 1
        finally:
            session.close()


async def test_a_tool_that_runs_in_the_kernel_asks_kibitzer_before_each_call(explore):
    ran: list[str] = []

    def bash(command):
        ran.append(command)
        return "done"

    with LackpyService(explore) as service:
        service.toolbox.register_tool(ToolSpec("Bash", "shell", args=[ArgSpec("command", "str")]),
                                      bash)
        refused = await service.run_program('Bash("echo hi > " + "out.txt")', ["Bash"])
        done = await service.run_program('Bash("l" + "s")', ["Bash"])
    assert "Kibitzer (explore mode) refused Bash()" in refused.error
    assert done.success and ran == ["ls"]


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "in-process"])
def test_an_agents_tool_calls_go_through_kibitzer(tmp_path, model_env, model_server, sandbox):
    workspace = make_workspace(tmp_path)
    agents.write_config(workspace, "anthropic", model_server)
    model_server.script(lb.tool_turn("anthropic", "", [
        ("read_file", {"path": "notes.txt"}),
        ("write_file", {"path": "out.txt", "content": "x"}),
        ("lackpy", {"program": 'write_file("o.txt", read_file("notes.txt"))'})]),
        lb.tool_turn("anthropic", "done"))
    config = LackpyConfig(sandbox_enabled=sandbox, sandbox_approve="never", sandbox_timeout=30,
                          kibitzer_mode="explore")
    with LackpyService(workspace, config) as service:
        engine = LLMEngine(agents.MODEL, provider="loop", workspace=workspace, **agents.FAST)
        envelope = Agent(engine, tools="read_file,write_file,lackpy", service=service,
                         auto_run="write").run("copy the notes")
        used = dict(service.kibitzer.session.state["tools_used_in_mode"])
    assert envelope.ok
    read, write, program = agents.tool_results("anthropic", model_server.requests[1])
    assert read == "alpha\nbeta\ngamma\n"
    assert write.startswith("ChangeRefusedError: the program's changes to out.txt were not "
                            f"applied: {REFUSED} (tried to write: out.txt)")
    assert program.startswith("ToolCallError: Kibitzer (explore mode) refused the program: ")
    assert not (workspace / "out.txt").exists() and not (workspace / "o.txt").exists()
    assert used == {"Read": 1, "Write": 1}  # after_call heard of the calls that ran


def test_the_seeds_kibitzer_session_parameters(explore):
    for function in (RestrictedRunner.run, make_traced, InferenceDispatcher.generate):
        assert inspect.signature(function).parameters["kibitzer_session"].default is None
    session = KibitzerSession(project_dir=explore)
    session.load()
    session.change_mode("explore")
    tools = resolve_kit(KIT, builtin_toolbox(explore)).callables
    result = RestrictedRunner().run(WRITE, tools, kibitzer_session=session)
    assert ASKED_AT_THE_CALL in result.error and not (explore / "out.txt").exists()
    assert session.state["tools_used_in_mode"] == {"Read": 1, "Write": 1}  # after_call, each
    trace = Trace()
    read = make_traced("read_file", tools["read_file"], trace, kibitzer_session=session)
    assert read("notes.txt").startswith("alpha")
    assert session.state["tools_used_in_mode"]["Read"] == 2


class Leaky:
    """A model tier (a provider as the lackpy docs describe them) that reaches for open()."""

    name, model = "leaky", "tiny-leaky"

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.feedback: list[list[str] | None] = []

    def available(self) -> bool:
        return True

    async def generate(self, intent, namespace_desc, config=None, error_feedback=None):
        self.prompts.append(config["system_prompt"])
        self.feedback.append(error_feedback)
        return "text = open('notes.txt')"


async def test_kibitzer_hears_of_generations_and_its_hints_reach_the_prompt_and_corrections(
        tmp_path):
    hint = "Do NOT use open() — call read_file() instead"
    with LackpyService(kibitzer_workspace(tmp_path, None)) as service:
        leaky = Leaky()
        service.inference_providers[:] = [leaky]
        with pytest.raises(GenerationError):
            await service.generate("read my notes", KIT)
        assert "Lessons from earlier programs" not in leaky.prompts[0]
        assert leaky.feedback[0] is None and all(hint in told for told in leaky.feedback[1:])
        with pytest.raises(GenerationError):
            await service.generate("read my notes", KIT)
        assert f"Lessons from earlier programs:\n- {hint}" in leaky.prompts[-1]
        failures = service.kibitzer.session.get_failure_patterns(model="tiny-leaky")
    assert [(f["pattern"], f["count"]) for f in failures] == [("stdlib_leak", 2)]


async def test_kibitzer_hears_a_program_with_literal_calls_before_it_runs_and_its_calls_after_on_its_thread(
        explore, monkeypatch):
    monkeypatch.setattr(kibitzer, "SAVE_QUIET", 600)  # saved as the service closes, not before
    with LackpyService(explore) as service:
        heard: list[tuple[str, str]] = []
        session = service.kibitzer.session

        def listening(method, real):
            def told(*args, **kwargs):
                heard.append((method, threading.current_thread().name))
                return real(*args, **kwargs)
            return told

        for method in ("register_tools", "get_mode_policy", "validate_program", "after_call",
                       "save"):
            monkeypatch.setattr(session, method, listening(method, getattr(session, method)))
        for _ in range(2):  # no literal call to judge, no call: Kibitzer is not asked
            assert (await service.run_program("1 + 1", KIT)).output == 2
        assert not heard
        for _ in range(2):
            assert (await service.run_program("read_file('notes.txt')", KIT)).success
    judged = ["register_tools", "get_mode_policy", "validate_program"]
    # a judgement changes nothing to save; the runs' calls and the mode the load set are
    # saved once, in a quiet moment (here: as the service closes), not between the runs
    # and the path guard the worker applies at the commit, for each run that calls a tool
    assert [method for method, _ in heard] == (judged + ["get_mode_policy", "after_call"]
                                               + judged + ["get_mode_policy", "after_call", "save"])
    assert {thread for _, thread in heard} == {"lackpy-kibitzer"}


COUNT_TOOL = 'def count(text: str) -> int:\n    """The words in ``text``."""\n    return len(text.split())\n'
COUNT_SOURCE = '[tools.providers.words]\nplugin = "python"\npath = "words.py"\ngrade = "read"\n' \
    'where = "child"\n\n'


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "in-process"])
@pytest.mark.parametrize(("kit", "program", "asked"), [
    (["read_file"], "read_file('notes.txt')", []),
    (["read_file", "write_file"],
     "names = ['out', 'out', 'two']\nfor name in names:\n    write_file(name + '.txt', 'x')",
     ["out.txt", "two.txt"]),
    (["count"], "count('a b c')", []),
], ids=["reads", "writes", "a python tool"])
async def test_kibitzer_is_asked_about_each_staged_file_once_at_the_commit(
        tmp_path, monkeypatch, sandbox, kit, program, asked):
    """Nothing asks Kibitzer from the program's process. At the commit, the sandbox's worker
    applies Kibitzer's path guard itself: paths it allows land with no question; in this
    process each file the program staged is put to ``before_call`` once, as a Write. It
    hears of each call after the run."""
    workspace = make_workspace(tmp_path, COUNT_SOURCE + '[sandbox]\napprove = "never"\n')
    (workspace / "words.py").write_text(COUNT_TOOL)
    with LackpyService(workspace) as service:
        questions: list[tuple[str, dict]] = []
        heard: list[str] = []
        session = service.kibitzer.session
        before, after = session.before_call, session.after_call
        monkeypatch.setattr(session, "before_call", lambda tool, given: questions.append(
            (tool, given)) or before(tool, given))
        monkeypatch.setattr(session, "after_call",
                            lambda tool, *rest: heard.append(tool) or after(tool, *rest))
        result = await service.run_program(program, kit, sandbox=sandbox)
        gate_called = await service.run_program("__kibitzer__('write_file', [], {})", kit)
    assert result.success, result.error
    assert questions == ([] if sandbox else [("Write", {"file_path": path}) for path in asked])
    assert len(heard) == len(result.trace.entries) > 0, heard
    assert gate_called.error_type == "LackpyValidationError"  # no hidden tool to reach


async def test_kibitzers_state_is_saved_once_no_question_came_for_a_moment(explore,
                                                                           monkeypatch):
    monkeypatch.setattr(kibitzer, "SAVE_QUIET", 0.05)
    with LackpyService(explore) as service:
        assert (await service.run_program("read_file('notes.txt')", KIT)).success
        state = explore / ".kibitzer" / "state.json"
        deadline = time.monotonic() + 30
        while not state.exists() and time.monotonic() < deadline:  # not waiting for close
            time.sleep(0.05)
        assert saved_state(explore)["tools_used_in_mode"] == {"Read": 1}


def saved_state(workspace):
    return json.loads((workspace / ".kibitzer" / "state.json").read_text())


async def test_kibitzers_state_reaches_disk_and_a_later_service_sees_it(explore):
    with LackpyService(explore) as service:
        assert (await service.run_program(FIVE_READS, KIT)).success
    assert saved_state(explore)["tools_used_in_mode"] == {"Read": 5}
    with LackpyService(explore) as service:
        assert (await service.run_program("read_file('notes.txt')", KIT)).success
        assert service.kibitzer.session.state["tools_used_in_mode"] == {"Read": 6}
    assert saved_state(explore)["tools_used_in_mode"] == {"Read": 6}


async def test_a_refused_program_alone_still_saves_the_mode_when_the_service_closes(explore):
    with LackpyService(explore) as service:
        result = await service.run_program('write_file("o.txt", "x")', KIT)
        assert result.error.startswith("Kibitzer (explore mode) refused the program: ")
    assert saved_state(explore)["mode"] == "explore"


async def test_a_cell_does_not_wait_for_the_save_and_close_waits_for_it(explore, monkeypatch):
    with LackpyService(explore) as service:
        session, go = service.kibitzer.session, threading.Event()
        real_save = session.save

        def held_save():
            go.wait()
            real_save()

        monkeypatch.setattr(session, "save", held_save)
        result = await service.run_program("read_file('notes.txt')", KIT)  # its save waits
        assert result.success and not (explore / ".kibitzer" / "state.json").exists()
        service.kibitzer.timeout = 600  # close() waits for the thread up to this
        threading.Timer(0.05, go.set).start()  # while close() waits
        service.kibitzer.close()
        assert saved_state(explore)["tools_used_in_mode"] == {"Read": 1}


async def test_a_kibitzer_that_raises_never_breaks_a_cell(tmp_path, monkeypatch):
    workspace = kibitzer_workspace(tmp_path, None)
    with LackpyService(workspace) as service:
        def broken(*args, **kwargs):
            raise RuntimeError("kibitzer broke")

        for method in ("before_call", "after_call", "validate_program", "get_mode_policy"):
            monkeypatch.setattr(service.kibitzer.session, method, broken)
        for _ in range(2):
            result = await service.run_program('write_file("out.txt", read_file("notes.txt"))', KIT)
            assert result.success, result.error
        said = [notice for notice in service.notices if "kibitzer broke" in notice]
    assert len(said) == 4, said  # once for each of its methods that failed
    assert (workspace / "out.txt").read_text().startswith("alpha")


async def test_a_kibitzer_that_hangs_is_set_aside_and_the_cell_goes_on(tmp_path, monkeypatch):
    workspace = kibitzer_workspace(tmp_path, None)
    release = threading.Event()
    try:
        with LackpyService(workspace) as service:
            monkeypatch.setattr(service.kibitzer.session, "after_call",
                                lambda *args, **kwargs: release.wait())
            service.kibitzer.timeout = 0.5
            for _ in range(2):
                result = await service.run_program('write_file("o.txt", "x")', KIT)
                assert result.success, result.error
            said = [notice for notice in service.notices if "took over 0.5 s" in notice]
            assert len(said) == 1 and "without it in this session" in said[0]
            assert "set aside" in service.kibitzer.describe()
    finally:
        release.set()


async def test_kibitzer_enabled_false_leaves_it_out(tmp_path):
    workspace = make_workspace(tmp_path, "[kibitzer]\nenabled = false\n")
    with LackpyService(workspace) as service:
        assert service.kibitzer is None
        assert (await service.run_program("read_file('notes.txt')", KIT)).success
    assert not (workspace / ".kibitzer").exists()


host = host_with(lambda folder: kibitzer_workspace(folder, None))


def test_kibitzer_magic_and_its_suggestions_under_the_cell(host: Host):
    assert host.run("%kibitzer").text == "Kibitzer: free mode\n  no suggestions yet"
    cell = host.program(FIVE_READS, kit="read_file")
    assert cell.ok, cell
    assert f"lackpy: {SEQUENTIAL_READS}" in cell.stderr
    shown = host.run("%kibitzer").text
    assert shown.startswith("Kibitzer: free mode\n  ") and SEQUENTIAL_READS in shown


async def test_a_closed_service_leaves_no_kibitzer_thread(tmp_path):
    def watching() -> set[threading.Thread]:
        return {thread for thread in threading.enumerate() if thread.name == "lackpy-kibitzer"}

    before = watching()
    for _ in range(3):
        with LackpyService(kibitzer_workspace(tmp_path, None)) as service:
            assert (await service.run_program("read_file('notes.txt')", KIT)).success
    started = watching() - before
    for thread in started:
        thread.join(timeout=60)
    assert len(started) <= 3 and not any(thread.is_alive() for thread in started)


class _SlowToTake(dict):
    """The watch's shared state, its load taken slowly: a thread switch right after the take."""

    def pop(self, key, *default):
        taken = super().pop(key, *default)
        if key == "load" and taken is not None:
            threading.Event().wait(0.3)  # another thread asks meanwhile
        return taken


def test_no_question_is_answered_before_kibitzer_has_loaded(tmp_path):
    """Two threads asking first: the one that takes the load queues it ahead of the other's
    question (unloaded, Kibitzer knows no mode and refuses every write as read-only)."""
    from lackpy_kernel.kibitzer import Watch

    watch = Watch.open(kibitzer_workspace(tmp_path, None), enabled=True)
    watch._shared = _SlowToTake(watch._shared)
    refused: list[str] = []

    def ask() -> None:
        try:
            watch.before_call("write_file", {"path": "out.txt"})
        except Exception as exc:
            refused.append(str(exc))

    first = threading.Thread(target=ask)
    first.start()
    threading.Event().wait(0.1)  # the first has taken the load and waits in the take
    ask()
    first.join(timeout=60)
    watch.close()
    assert refused == []
