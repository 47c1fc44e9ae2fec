"""Every plan that cannot run fails at construction, saying what is wrong and what was meant."""

from __future__ import annotations

from typing import TypedDict

import pytest

from lackpy_kernel.engines import (
    Delegate,
    Plan,
    PlanCompileError,
    Program,
    Step,
    Store,
    from_parallel_all,
    from_prev,
    from_step,
)


def echo(task):
    return task


def fetch(task):
    return task


def compile_error(*steps, **options) -> str:
    with pytest.raises(PlanCompileError) as caught:
        Plan(*steps, **options)
    return str(caught.value)


def test_duplicate_step_names_suggest_a_free_name():
    message = compile_error(Step(echo), Step(fetch), Step(echo))
    assert "two steps are named 'echo' (steps 1 and 3)" in message
    assert "did you mean name='echo_2' for step 3?" in message


def test_two_programs_without_names_collide_and_the_message_says_how_to_name_them(service):
    message = compile_error(Step(Program("task")), Step(Program("task")), service=service)
    assert "two steps are named 'program'" in message and "name='program_2'" in message


def test_a_tool_not_in_the_kit_is_refused_with_close_names(service):
    message = compile_error(Step("reed_file"), service=service)
    assert "step 'reed_file': no tool 'reed_file' in the plan's kit" in message
    assert "did you mean 'read_file'" in message


def test_a_tool_of_another_kit_is_refused_against_the_plans_kit(service):
    message = compile_error(Step("write_file"), kit=["read_file"], service=service)
    assert "no tool 'write_file'" in message and "'read_file'" in message


def test_an_unknown_kit_is_a_compile_error_naming_the_step(service):
    message = compile_error(Step(Program("task", kit="no-such-kit"), name="p"), service=service)
    assert "step 'p': its kit cannot be used: no kit named 'no-such-kit'" in message


def test_a_from_step_naming_no_step_suggests_the_close_one():
    message = compile_error(Step(fetch), Step(echo, task=from_step("fecth")))
    assert "step 'echo': task=from_step('fecth') names no step; did you mean 'fetch'?" in message


def test_a_from_step_naming_a_later_step_is_refused():
    message = compile_error(Step(echo, context=from_step("fetch")), Step(fetch))
    assert "context=from_step('fetch'), but 'fetch' comes later (step 2)" in message
    assert "did you mean from_prev, or to move 'fetch' before 'echo'?" in message


def test_a_step_reading_its_own_output_is_refused():
    message = compile_error(Step(echo, task=from_step("echo")))
    assert "'echo' is this step" in message


def test_from_parallel_all_needs_a_parallel_step():
    message = compile_error(Step(fetch), Step(echo, task=from_parallel_all("fetch")))
    assert "'fetch' is not a parallel step; did you mean from_step('fetch')?" in message


def test_references_inside_a_context_list_are_checked():
    message = compile_error(Step(fetch), Step(echo, context=["note", from_step("nope")]))
    assert "context=from_step('nope') names no step" in message


def test_routes_and_routes_by_together_are_refused():
    message = compile_error(Step(echo, routes={"fetch": bool}, routes_by="next"), Step(fetch))
    assert "has both routes= and routes_by=; did you mean routes= alone" in message


def test_a_route_to_no_step_suggests_the_close_one():
    message = compile_error(Step(echo, routes={"fetchh": bool}), Step(fetch))
    assert "step 'echo': routes to 'fetchh', which names no step; did you mean 'fetch'?" in message


def test_a_route_that_is_not_a_predicate_is_refused():
    message = compile_error(Step(echo, routes={"fetch": "yes"}), Step(fetch))
    assert "the route to 'fetch' is 'yes', not a predicate; did you mean lambda output" in message


def test_after_branches_without_routing_is_refused():
    message = compile_error(Step(echo, after_branches="fetch"), Step(fetch))
    assert "after_branches='fetch' without routes= or routes_by= has nothing to rejoin" in message
    assert "did you mean to add routes=?" in message


def test_after_branches_naming_no_step_is_refused():
    message = compile_error(Step(echo, routes={"fetch": bool}, after_branches="fech"), Step(fetch))
    assert "after_branches='fech' names no step; did you mean 'fetch'" in message


def test_routes_on_a_parallel_step_are_refused_because_a_band_never_reads_them():
    message = compile_error(Step(echo, parallel=True, routes={"fetch": bool}), Step(fetch))
    assert "is parallel" in message and "did you mean parallel=False?" in message


class Verdict(TypedDict):
    next: str
    reason: str


def test_routes_by_a_field_the_output_type_lacks_is_refused():
    message = compile_error(Step(echo, output=Verdict, routes_by="nxt"), Step(fetch))
    assert "routes_by='nxt', but its output Verdict has no such field; did you mean 'next'?" \
        in message


def test_a_program_that_does_not_validate_names_the_step_line_and_column(service):
    program = Program("lines = read_file(task).splitlines()\nimport os\nlen(lines)")
    message = compile_error(Step(program, name="count"), service=service)
    assert "step 'count': line 2, col 1: Import is not allowed" in message


def test_an_unknown_name_in_a_program_gets_a_suggestion(service):
    message = compile_error(Step(Program("len(taks)"), name="count"), service=service)
    assert "step 'count': line 1, col 5: unknown name 'taks'" in message
    assert "did you mean task" in message


def test_programs_see_task_and_context_and_the_kits_tools(service):
    plan = Plan(Step(Program("read_file(task) + str(context)"), name="read"), service=service)
    assert [step.name for step in plan.steps] == ["read"]


def test_a_program_is_validated_against_its_own_kit(service):
    message = compile_error(Step(Program("write_file(task, 'x')", kit=["read_file"]), name="w"),
                            service=service)
    assert "step 'w': line 1, col 1: unknown function 'write_file'" in message


def test_a_delegate_needs_an_intent(service):
    message = compile_error(Step(Delegate("  "), name="d"), service=service)
    assert "step 'd': Delegate needs an intent" in message


def test_a_callable_that_cannot_take_the_task_is_refused():
    def no_arguments():
        return 1

    message = compile_error(Step(no_arguments))
    assert "its callable cannot be called with (task)" in message
    assert "did you mean def no_arguments(task)?" in message


def test_a_callable_given_a_context_must_take_it():
    message = compile_error(Step(fetch), Step(echo, context=from_prev))
    assert "cannot be called with (task, context)" in message


def test_a_target_that_is_nothing_runnable_is_refused():
    message = compile_error(Step(42, name="n"))
    assert "its target 42 is not a tool name, a callable, a Program, a Delegate or an Approval" \
        in message


def test_a_step_writing_the_checkpoint_key_is_refused():
    message = compile_error(Step(echo, writes="run"), store=Store(), checkpoint_key="run")
    assert "writes 'run', the plan's checkpoint key" in message


def test_every_problem_is_listed_at_once():
    message = compile_error(Step(echo), Step(echo), Step(fetch, task=from_step("nope")))
    assert message.startswith("the plan cannot run (2 problems):")


@pytest.mark.parametrize(("options", "said"), [
    ({"max_iterations": 0}, "max_iterations=0 must be a whole number of at least 1"),
    ({"on_concurrent": "queue"}, "on_concurrent='queue'; did you mean 'fail'"),
    ({"checkpoint_key": "k"}, "checkpoint_key= without store= has nowhere to checkpoint"),
    ({"resume": True}, "resume=True needs store= and checkpoint_key="),
    ({"store": Store(), "checkpoint_key": "k", "resume": True, "on_concurrent": "fork"},
     "resume=True with on_concurrent='fork' cannot work"),
    ({"store": "run.sqlite", "checkpoint_key": "k"}, "is not a Store; did you mean store=Store("),
])
def test_plan_options_are_checked_at_construction(options, said):
    assert said in compile_error(Step(echo), **options)


def test_an_empty_plan_is_refused():
    assert "a plan needs at least one step" in compile_error()


def test_an_argument_that_is_not_a_step_is_refused_with_the_step_it_meant():
    message = compile_error(Step(echo), "fetch")
    assert "argument 2 is str, not a Step; did you mean Step('fetch')?" in message
    assert "has no name" not in message
