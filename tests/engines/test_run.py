"""Running a plan: steps in order, bands, sentinels, routes, loops, pauses and what comes back."""

from __future__ import annotations

import asyncio
import threading

import pytest

from lackpy_kernel.engines import (
    Delegate,
    Envelope,
    Plan,
    PlanPaused,
    PlanRuntimeError,
    PlanStepError,
    Program,
    Step,
    Store,
    from_parallel_all,
    from_prev,
    from_start,
    from_step,
)


def shout(task):
    return str(task).upper()


def count_lines(task):
    return len(task.splitlines())


# -- steps and their targets ----------------------------------------------------------


def test_steps_run_in_order_each_taking_the_previous_output(service):
    plan = Plan(Step("read_file"), Step(shout), Step(count_lines), service=service)
    envelope = plan.run("notes.txt")
    assert envelope.ok and envelope.payload == 3
    assert [(r.name, r.output) for r in envelope.history] == [
        ("read_file", "alpha\nbeta\ngamma\n"), ("shout", "ALPHA\nBETA\nGAMMA\n"),
        ("count_lines", 3)]


def test_a_tool_step_runs_as_a_one_line_program_and_is_traced(service):
    envelope = Plan(Step("read_file"), service=service).run("notes.txt")
    (result,) = envelope.history
    assert result.program == "read_file(task)"
    assert [(e.tool, e.args) for e in envelope.trace] == [("read_file", {"path": "notes.txt"})]


def test_a_task_cannot_smuggle_code_into_a_tool_step(service, workspace):
    hostile = "x'); write_file('owned.txt', 'x'); ('"
    envelope = Plan(Step("read_file"), service=service).run(hostile)
    assert envelope.error.type == "LackpyRuntimeError" and "FileNotFoundError" in envelope.error.message
    assert not (workspace / "owned.txt").exists()


def test_a_program_step_sees_task_and_context_and_its_last_expression_is_the_output(service):
    program = Program("words = read_file(task).split()\n{'n': len(words), 'note': context}")
    plan = Plan(Step(program, name="words", context="counted"), service=service)
    envelope = plan.run("notes.txt")
    assert envelope.payload == {"n": 3, "note": "counted"}
    assert envelope.history[0].program == program.source


def test_a_program_that_fails_at_run_time_is_an_error_value_with_its_line(service):
    plan = Plan(Step(Program("x = 1\nread_file(task)"), name="read"), service=service)
    envelope = plan.run("missing.txt")
    assert envelope.error.type == "LackpyRuntimeError"
    assert "(line 2: read_file(task))" in envelope.error.message
    assert envelope.error.retryable is False and envelope.history == []


def test_a_program_runs_under_the_sandbox_limits(sandboxed):
    plan = Plan(Step(Program("sum(range(1000000000000))"), name="spin"), service=sandboxed)
    envelope = plan.run(None)
    assert envelope.error.type == "ProgramTimeoutError"
    assert "2 s limit" in envelope.error.message and envelope.error.retryable


def test_a_delegate_step_gets_its_program_from_the_tiers_and_runs_it(service):
    plan = Plan(Step(Delegate("read the file notes.txt"), name="read"), service=service)
    envelope = plan.run(None)
    assert envelope.payload == "alpha\nbeta\ngamma\n"
    assert "read_file('notes.txt')" in envelope.history[0].program
    assert [e.tool for e in envelope.trace] == ["read_file"]


def test_a_delegate_no_tier_can_write_is_an_error_value(service):
    plan = Plan(Step(Delegate("compose a sonnet about tides"), name="poem"), service=service)
    envelope = plan.run(None)
    assert envelope.error.type == "GenerationError" and envelope.history == []


def test_a_callable_that_raises_is_an_error_value():
    def broken(task):
        raise ValueError("no such customer")

    envelope = Plan(Step(broken)).run("c-1")
    assert envelope.error.type == "ValueError" and envelope.error.message == "no such customer"


def test_raise_for_error_turns_an_error_value_into_plan_step_error():
    def broken(task):
        raise ValueError("no such customer")

    ok = Plan(Step(shout)).run("x")
    assert ok.raise_for_error() is ok
    failed = Plan(Step(broken)).run("c-1")
    with pytest.raises(PlanStepError, match="ValueError: no such customer") as caught:
        failed.raise_for_error()
    assert caught.value.envelope is failed and caught.value.error.type == "ValueError"


def test_an_async_callable_is_awaited():
    async def later(task):
        await asyncio.sleep(0)
        return task * 2

    assert Plan(Step(later)).run(21).payload == 42


def test_the_trace_holds_every_tool_call_of_the_run_in_order(service):
    plan = Plan(Step(Program("read_file('notes.txt')\nread_file(task)"), name="two"),
                Step(Program("find_files('*.txt')"), name="find", task=from_start),
                service=service)
    envelope = plan.run("todo.txt")
    assert [(e.step, e.tool) for e in envelope.trace] == [
        (0, "read_file"), (1, "read_file"), (2, "find_files")]


def test_each_history_entry_has_name_output_program_and_ms(service):
    envelope = Plan(Step("read_file"), Step(count_lines), service=service).run("notes.txt")
    first, second = envelope.history
    assert (first.name, first.program, second.program) == ("read_file", "read_file(task)", None)
    assert first.ms > 0 and second.ms >= 0


def test_on_step_hears_each_step_start_and_end():
    heard = []
    Plan(Step(shout), Step(count_lines)).run("a\nb", on_step=lambda *e: heard.append(e[:2]))
    assert heard == [("shout", "running"), ("shout", "done"),
                     ("count_lines", "running"), ("count_lines", "done")]


async def test_run_is_safe_inside_a_running_event_loop():
    asyncio.get_running_loop()  # as in a notebook cell
    assert Plan(Step(shout)).run("hi").payload == "HI"


async def test_arun_is_the_async_form():
    assert (await Plan(Step(shout)).arun("hi")).payload == "HI"


def test_envelope_to_dict_round_trips(service):
    envelope = Plan(Step("read_file"), Step(count_lines), service=service).run("notes.txt")
    assert Envelope.from_dict(envelope.to_dict()) == envelope


# -- sentinels and context -------------------------------------------------------------


def test_sentinels_pick_the_start_a_named_step_or_the_previous_output():
    def pair(task, context):
        return [task, context]

    plan = Plan(Step(shout, name="loud"), Step(count_lines),
                Step(pair, task=from_start, context=from_step("loud")))
    assert plan.run("a\nb").payload == ["a\nb", "A\nB"]


def test_a_context_list_is_joined_as_text_with_blank_lines():
    def see(task, context):
        return context

    plan = Plan(Step(shout), Step(count_lines), Step(see, context=["counts:", from_prev,
                                                                  from_step("shout")]))
    assert plan.run("x\ny").payload == "counts:\n\n2\n\nX\nY"


def test_from_parallel_all_gathers_a_bands_outputs_by_name():
    def first(task):
        return task[0]

    def last(task):
        return task[-1]

    def both(task):
        return task

    plan = Plan(Step(first, parallel=True), Step(last, parallel=True),
                Step(both, task=from_parallel_all("first")))
    assert plan.run("abc").payload == {"first": "a", "last": "c"}


def test_a_literal_task_is_given_as_it_is():
    assert Plan(Step(shout, task="fixed")).run("ignored").payload == "FIXED"


# -- parallel bands ---------------------------------------------------------------------


def test_a_band_runs_its_steps_at_the_same_time():
    meet = threading.Barrier(2, timeout=30)

    def left(task):
        meet.wait()  # breaks unless the other step is running too
        return "left"

    def right(task):
        meet.wait()
        return "right"

    envelope = Plan(Step(left, parallel=True), Step(right, parallel=True)).run(None)
    assert envelope.ok and [r.name for r in envelope.history] == ["left", "right"]


def test_every_step_of_a_band_sees_the_input_from_before_the_band():
    def a(task):
        return task + "a"

    def b(task):
        return task + "b"

    envelope = Plan(Step(a, parallel=True), Step(b, parallel=True)).run(">")
    assert [r.output for r in envelope.history] == [">a", ">b"]


def test_a_band_whose_one_step_fails_applies_no_write():
    store = Store()

    def good(task):
        return "fine"

    def bad(task):
        raise RuntimeError("upstream is down")

    plan = Plan(Step(shout, writes="before"), Step(good, parallel=True, writes="good"),
                Step(bad, parallel=True, writes="bad"), store=store)
    envelope = plan.run("x")
    assert envelope.error.message == "upstream is down"
    assert store.keys() == ["before"]
    assert [r.name for r in envelope.history] == ["shout"]


def test_a_band_applies_its_writes_together_when_all_succeed():
    store = Store()

    def a(task):
        return 1

    def b(task):
        return 2

    Plan(Step(a, parallel=True, writes="a"), Step(b, parallel=True, writes="b"),
         store=store).run(None)
    assert (store.read("a"), store.read("b")) == (1, 2)


# -- routes and loops -------------------------------------------------------------------


def step_names(envelope: Envelope) -> list[str]:
    return [result.name for result in envelope.history]


def test_a_route_is_a_detour_after_which_the_plan_goes_on_from_there():
    def start(task):
        return task

    def skipped(task):
        return task

    def target(task):
        return task

    def end(task):
        return task

    plan = Plan(Step(start, routes={"target": lambda out: out == "go"}), Step(skipped),
                Step(target), Step(end))
    assert step_names(plan.run("go")) == ["start", "target", "end"]
    assert step_names(plan.run("stay")) == ["start", "skipped", "target", "end"]


def test_the_first_true_route_wins_in_declared_order():
    def pick(task):
        return task

    def one(task):
        return 1

    def two(task):
        return 2

    plan = Plan(Step(pick, routes={"two": lambda out: True, "one": lambda out: True}),
                Step(one), Step(two))
    assert step_names(plan.run(None)) == ["pick", "two"]


def test_after_branches_makes_a_route_an_exclusive_branch_that_rejoins():
    def classify(task):
        return task

    def small(task):
        return "small"

    def large(task):
        return "large"

    def report(task):
        return f"report: {task}"

    plan = Plan(Step(classify, routes={"small": lambda n: n < 10, "large": lambda n: n >= 10},
                     after_branches="report"),
                Step(small), Step(large), Step(report))
    assert step_names(plan.run(3)) == ["classify", "small", "report"]
    assert step_names(plan.run(30)) == ["classify", "large", "report"]
    assert plan.run(30).payload == "report: large"


def test_routes_by_reads_the_field_of_a_structured_output():
    def triage(task):
        return {"next": task, "why": "rule"}

    def fix(task):
        return "fixed"

    def ship(task):
        return "shipped"

    plan = Plan(Step(triage, routes_by="next"), Step(fix), Step(ship))
    assert step_names(plan.run("ship")) == ["triage", "ship"]
    assert step_names(plan.run(None)) == ["triage", "fix", "ship"]  # None: no route


def test_routes_by_a_value_naming_no_step_is_a_plan_bug():
    def triage(task):
        return {"next": "shp"}

    def ship(task):
        return task

    with pytest.raises(PlanRuntimeError, match="'next' is 'shp', which names no step; did you mean 'ship'"):
        Plan(Step(triage, routes_by="next"), Step(ship)).run(None)


def test_routes_by_a_field_the_output_lacks_is_a_plan_bug():
    def triage(task):
        return {"nxt": "ship"}

    def ship(task):
        return task

    with pytest.raises(PlanRuntimeError, match="routes by the field 'next'.*did you mean 'nxt'"):
        Plan(Step(triage, routes_by="next"), Step(ship)).run(None)


def test_a_loop_is_a_route_back_and_ends_when_its_predicate_does():
    def bump(task):
        return task + 1

    def done(task):
        return f"reached {task}"

    plan = Plan(Step(bump, routes={"bump": lambda n: n < 5}), Step(done))
    envelope = plan.run(0)
    assert envelope.payload == "reached 5" and step_names(envelope).count("bump") == 5


def test_a_loop_that_never_ends_is_stopped_by_max_iterations():
    def bump(task):
        return task + 1

    envelope = Plan(Step(bump, routes={"bump": lambda n: True}), max_iterations=7).run(0)
    assert envelope.error.type == "MaxIterationsExceeded"
    assert "max_iterations=7" in envelope.error.message and envelope.payload == 7
    assert len(envelope.history) == 7


def test_a_route_predicate_that_raises_is_a_plan_bug_naming_the_step_and_target():
    def check(task):
        return {}

    def next_step(task):
        return task

    plan = Plan(Step(check, routes={"next_step": lambda out: out["missing"]}), Step(next_step))
    with pytest.raises(PlanRuntimeError, match=r"step 'check' \(callable .*check\): the route "
                                               r"predicate for 'next_step' raised KeyError"):
        plan.run(None)


def test_a_from_step_whose_step_a_route_skipped_is_a_plan_bug():
    def start(task):
        return task

    def maybe(task):
        return task

    def use(task):
        return task

    plan = Plan(Step(start, routes={"use": lambda out: True}), Step(maybe),
                Step(use, task=from_step("maybe")))
    with pytest.raises(PlanRuntimeError, match="reads the output of 'maybe', which has not run"):
        plan.run(None)


# -- types --------------------------------------------------------------------------------


def test_an_output_of_the_wrong_type_fails_the_step():
    envelope = Plan(Step(shout, output=dict)).run("x")
    assert envelope.error.type == "TypeError"
    assert "step 'shout' should output dict, and it is a str, not a dict" in envelope.error.message


def test_an_input_of_the_wrong_type_fails_the_step_before_it_runs():
    ran = []

    def record(task):
        ran.append(task)

    envelope = Plan(Step(record, input=int)).run("seven")
    assert envelope.error.type == "TypeError" and ran == []


# -- pauses -------------------------------------------------------------------------------


def test_plan_paused_ends_the_run_with_a_retryable_error():
    def wait_for_approval(task):
        raise PlanPaused("waiting for approval")

    envelope = Plan(Step(shout), Step(wait_for_approval)).run("x")
    assert envelope.error.type == "PlanPaused" and envelope.error.retryable
    assert "paused at step 'wait_for_approval': waiting for approval" in envelope.error.message
    assert envelope.payload == "X" and step_names(envelope) == ["shout"]


def test_a_pause_is_not_swallowed_by_a_steps_except_exception():
    def careful(task):
        try:
            raise PlanPaused("hold")
        except Exception:  # what a careless step does; the pause goes through
            return "swallowed"

    assert Plan(Step(careful)).run(None).error.type == "PlanPaused"


def test_plan_paused_inside_a_band_applies_none_of_the_bands_writes():
    store = Store()

    def fine(task):
        return "fine"

    def hold(task):
        raise PlanPaused("not yet")

    envelope = Plan(Step(fine, parallel=True, writes="fine"),
                    Step(hold, parallel=True, writes="hold"), store=store).run(None)
    assert envelope.error.type == "PlanPaused"
    assert "in the parallel band from 'fine', which runs again whole" in envelope.error.message
    assert store.keys() == [] and envelope.history == []


def test_a_plan_of_callables_needs_no_workspace(tmp_path, monkeypatch):
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text("this is not toml")
    monkeypatch.chdir(tmp_path)  # a broken config here would stop any service from starting
    assert Plan(Step(shout)).run("fine").payload == "FINE"


def test_without_a_service_a_plan_works_in_the_current_directory(workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    plan = Plan(Step("read_file"), Step(Program("len(task)"), name="n"))
    assert plan.run("notes.txt").payload == 17
    assert plan.run_many(["notes.txt", "todo.txt"])[1].payload == 12
