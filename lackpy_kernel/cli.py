"""The ``lackpy`` command: delegate, generate, validate, run and save lackpy programs."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lackpy_kernel.config import load_config
from lackpy_kernel.engines import Envelope, Plan
from lackpy_kernel.engines.plans import PlanLibrary, RunStatus
from lackpy_kernel.errors import (
    ChangeRefusedError,
    ConfigError,
    GenerationError,
    KitError,
    LackpyError,
    UsageError,
    error_text,
)
from lackpy_kernel.infer import failure_text
from lackpy_kernel.kit import NOTHING_TO_UNDO, Workspace, WorkspaceError, drop_last, undo_last
from lackpy_kernel.kit.changes import Change
from lackpy_kernel.notebook.approval import converse
from lackpy_kernel.notebook.bundles import output_text, table_bundle
from lackpy_kernel.notebook.syntax import parse_param
from lackpy_kernel.run.kernel_side import NO_ONE_TO_ASK, Approver
from lackpy_kernel.service import DelegateOptions, LackpyService, jsonable
from lackpy_kernel.telemetry import flush_writes, span, workspace_usage

if TYPE_CHECKING:  # the temporal extra is optional; it is imported where it is used
    from lackpy_kernel.engines.temporal import TemporalRunner, TemporalWorker

    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
ACP_HELP = """\
Be an agent over the Agent Client Protocol (ACP) on stdin and stdout, for an editor or
chat that starts agents (Zed's agent_servers, jupyter-ai, marimo). Each session works in
the folder the client gives as its cwd (the workspace, with its .lackpy/ config, kits and
templates). A prompt is delegated as %delegate does it: the program is shown as a tool
call, then run in the sandbox, and its result is the reply.

modes (the client's mode picker):
  run   the default: write the program and run it when it only reads; a program that
        writes runs too, and its file changes are shown as a diff and land only when
        you approve them (session/request_permission; a refusal changes nothing)
  plan  write the program and show it, without running it
  agent let the [agent] model call the kit's tools turn by turn, each call shown as a
        tool call; tools that write are refused

commands (type them as the prompt):
  /create NAME [PATTERN]  save the last program that ran well as a template, so the same
                          request is answered with no model call (the ratchet)
  /kit [KIT]              show the session's kit, or set it (a kit name, or tool,tool,...)

Sessions are kept in the workspace's .lackpy/acp/ (session/load brings one back); the
MCP servers the client passes are tool sources of their session. Cancel (the client's
stop button) stops a running program at once.
Needs the acp extra: pip install 'lackpy-kernel[acp]'."""
_temporal_used = False  # whether this process talked to Temporal (see entry)


def _param(text: str) -> tuple[str, Any]:
    try:
        return parse_param(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _variables(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise argparse.ArgumentTypeError(f"cannot read variables from {path}: {exc}") from None
    if not isinstance(data, dict):
        raise argparse.ArgumentTypeError(f"{path} must hold a JSON object of name -> value")
    return data


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workspace", type=Path, default=None,
                        help="folder the tools work in (default: the current directory)")
    common.add_argument("--json", action="store_true", help="print machine-readable JSON")
    kit = argparse.ArgumentParser(add_help=False)
    kit.add_argument("--kit", default=None,
                     help="kit name or comma-separated tools (default: the config's, else debug)")
    kit.add_argument("--param", type=_param, action="append", default=[],
                     metavar="NAME=VALUE", help="a named input; literals parse as Python")
    limits = argparse.ArgumentParser(add_help=False)
    limits.add_argument("--no-sandbox", action="store_true",
                        help="run in this process, without time or memory limits")
    limits.add_argument("--timeout", type=float, help="seconds a program may run")
    limits.add_argument("--memory-mb", type=int, help="memory a program may use")
    limits.add_argument("--yes", action="store_true",
                        help="apply the program's file changes without asking (they are "
                             "shown on stderr); without it, [sandbox] approve = \"write\" "
                             "asks on the terminal and refuses them where there is none")

    parser = argparse.ArgumentParser(prog="lackpy", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help: str, *parents: argparse.ArgumentParser) -> argparse.ArgumentParser:
        return commands.add_parser(name, parents=[common, *parents], help=help, description=help)

    context = argparse.ArgumentParser(add_help=False)
    context.add_argument("--variables", type=_variables, default=None, metavar="FILE.json",
                         help="a JSON object of values the program may use by name; the "
                              "model's prompt describes them")
    add("delegate", "generate a program for an intent and run it", kit, limits,
        context).add_argument("intent")
    add("generate", "write a program for an intent, without running it", kit,
        context).add_argument("intent")
    add("run", "validate and run a program file ('-' reads stdin)", kit, limits).add_argument(
        "file")
    add("validate", "validate a program file without running it", kit).add_argument("file")
    create = add("create", "save a program file as a template (the ratchet)", kit)
    create.add_argument("file")
    create.add_argument("--name", required=True, help="template name (file stem)")
    create.add_argument("--pattern", help="intent pattern with {placeholders}; default: the "
                                          "intent that last produced this program")
    kits = add("kit", "list, show or create kits")
    kit_commands = kits.add_subparsers(dest="kit_command", required=True, metavar="ACTION")
    kit_commands.add_parser("list", parents=[common], help="list kits")
    info = kit_commands.add_parser("info", parents=[common], help="show a kit's tools and grade")
    info.add_argument("kit")
    new_kit = kit_commands.add_parser("create", parents=[common], help="write a .kit file")
    new_kit.add_argument("name")
    new_kit.add_argument("--tools", required=True, help="comma-separated tool names")
    new_kit.add_argument("--description")
    add("toolbox", "list every registered tool").add_argument(
        "--check", action="store_true",
        help="load each tool source of [tools.providers] now and say which load and why not")
    add("templates", "list the workspace's templates")
    add("providers", "list the inference tiers and whether each is available")
    add("usage", "model calls (tokens, cost) by provider, tier and day, and the calls the "
                 "ratchet saved").add_argument("--since", metavar="DAY",
                                               help="from this day on: 2026-11-20, or 7d")
    add("mcp", "serve the lackpy tools over MCP (stdio)")
    add("doctor", "say what works here and what to fix: the sandbox's walls, extras, "
                  "reachable tiers, tool sources, the kernelspec, the config")
    undo = add("undo", "take back the file changes of the last program that wrote files "
                       "(again: the one before)")
    undo.add_argument("--skip-changed", action="store_true",
                      help="take back the files that did not change since, leave the others")
    undo.add_argument("--drop", action="store_true",
                      help="forget the last commit's undo record (no file changes)")
    commands.add_parser("acp", help="be an agent for Zed, jupyter-ai or marimo: the Agent "
                        "Client Protocol over stdio", description=ACP_HELP,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_plan_commands(commands, common)
    _add_worker_command(commands)
    return parser


def entry(argv: list[str] | None = None) -> None:
    """The ``lackpy`` program: ``main``, then exit with its code."""
    try:
        code = main(argv)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left early (``lackpy run P --json | head``)
        _drop_stdout()
        code = EXIT_FAILED
    if _temporal_used:
        # The temporalio SDK's runtime threads can crash the interpreter's teardown after a
        # failed connection (temporalio/sdk-python#300); skip the teardown: all is flushed.
        flush_writes()  # os._exit skips atexit, where the usage rows would be written
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush at exit finds no
    closed pipe (and prints no second error)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "acp":
        try:
            from lackpy_kernel.acp_server import main as agent  # noqa: PLC0415 - optional extra
        except ImportError as exc:
            if (exc.name or "").startswith("lackpy_kernel"):
                raise
            return _fail(f"the ACP agent needs the acp extra: pip install 'lackpy-kernel[acp]' "
                         f"({exc})", EXIT_USAGE)
        return agent()
    workspace = (args.workspace or Path.cwd()).resolve()
    if args.command == "mcp":
        try:
            from lackpy_kernel.mcp_server import main as serve  # noqa: PLC0415 - optional extra
        except ImportError as exc:
            if (exc.name or "").startswith("lackpy_kernel"):
                raise  # our own import failing is a bug, not a missing extra
            return _fail(f"the MCP server needs the mcp extra: pip install 'lackpy-kernel[mcp]' "
                         f"({exc})", EXIT_USAGE)
        return serve(workspace)
    if args.command == "doctor":
        from lackpy_kernel.doctor import diagnose  # noqa: PLC0415 - it reads the config itself

        report = diagnose(workspace)
        _show(args, report.to_dict(), report.text())
        return EXIT_OK if report.ok else EXIT_FAILED
    if args.command == "undo":
        return cmd_undo(args, workspace)
    try:
        config = load_config(workspace)
    except ConfigError as exc:
        return _fail(str(exc), EXIT_USAGE)
    if getattr(args, "timeout", None):
        config.sandbox_timeout = args.timeout
    if getattr(args, "memory_mb", None):
        config.sandbox_memory_mb = args.memory_mb
    with LackpyService(workspace, config) as service:
        try:
            with span(f"lackpy {args.command}"):
                return COMMANDS[args.command](service, args)
        except (KitError, UsageError) as exc:
            return _fail(error_text(exc), EXIT_USAGE)
        except GenerationError as exc:  # what to do, in this command's words
            return _fail(failure_text(exc, "cli"), EXIT_FAILED)
        except LackpyError as exc:
            return _fail(error_text(exc), EXIT_FAILED)


def cmd_undo(args: argparse.Namespace, workspace: Path) -> int:
    try:
        ws = Workspace(workspace)
        done = drop_last(ws) if args.drop else undo_last(ws, skip_changed=args.skip_changed)
    except WorkspaceError as exc:
        return _fail(str(exc), EXIT_FAILED)
    return _show(args, {"undone": done}, "\n".join(done) or NOTHING_TO_UNDO)


def _fail(message: str, code: int) -> int:
    print(f"lackpy: {message}", file=sys.stderr)
    return code


def _read_program(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    try:
        return Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the program file {name}: {exc}") from None


def _sandbox(args: argparse.Namespace) -> bool | None:
    return False if args.no_sandbox else None


def _approver(args: argparse.Namespace) -> Approver:
    """Shows a program's change on stderr, then applies it with ``--yes``, else asks
    ``question(change)`` on the terminal (stdin when it is one, else the controlling terminal);
    without a terminal it refuses, naming ``[sandbox] approve`` and ``--yes``."""
    def show(change: Change) -> None:
        print(change.to_text(), file=sys.stderr)

    def approve(change: Change) -> bool:
        if args.yes:
            show(change)
            print("applied (--yes)", file=sys.stderr)
            return True
        if sys.stdin.isatty():
            def ask(prompt: str) -> str:
                print(prompt, end="", file=sys.stderr, flush=True)
                return sys.stdin.readline()
            return converse(change, show, ask)
        try:
            with open("/dev/tty", "r+", encoding="utf-8") as terminal:
                def ask_terminal(prompt: str) -> str:
                    terminal.write(prompt)
                    terminal.flush()
                    return terminal.readline()
                return converse(change, show, ask_terminal)
        except OSError:
            show(change)
            raise ChangeRefusedError(f"there is no terminal to ask on, so {NO_ONE_TO_ASK}; "
                                     "or pass --yes to apply them") from None

    return approve


def cmd_delegate(service: LackpyService, args: argparse.Namespace) -> int:
    result = asyncio.run(service.delegation(args.intent, DelegateOptions(
        kit=args.kit, params=dict(args.param), sandbox=_sandbox(args), variables=args.variables,
        approve=_approver(args)))).to_dict()
    if args.json:
        _print_json(result)
    else:
        print(f"generation_tier: {result['generation_tier']}  (generated in "
              f"{result['generation_time_ms']:.1f} ms, ran in {result['execution_time_ms']:.1f} ms)")
        print("--- program\n" + result["program"])
        print("--- output")
        _print_outcome(result["stdout"], result["success"], result["output"], result["error"])
    return EXIT_OK if result["success"] else EXIT_FAILED


def cmd_generate(service: LackpyService, args: argparse.Namespace) -> int:
    result = asyncio.run(service.generate(args.intent, args.kit, dict(args.param),
                                          variables=args.variables))
    if args.json:
        _print_json(vars(result))
    else:
        # Who wrote it goes to stderr, so `lackpy generate ... > file.py` saves the program only.
        print(f"# {result.provider_name}, {result.generation_time_ms:.1f} ms", file=sys.stderr)
        print(result.program)
    return EXIT_OK


def cmd_run(service: LackpyService, args: argparse.Namespace) -> int:
    program = _read_program(args.file)
    result = asyncio.run(service.run_program(program, args.kit, dict(args.param),
                                             sandbox=_sandbox(args), approve=_approver(args)))
    if args.json:
        _print_json(result.to_dict())
    else:
        _print_outcome(result.stdout, result.success, result.output, result.error)
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
    return EXIT_OK if result.success else EXIT_FAILED


def cmd_validate(service: LackpyService, args: argparse.Namespace) -> int:
    result = service.validate(_read_program(args.file), args.kit,
                              param_names=[name for name, _ in args.param])
    if args.json:
        _print_json({"valid": result.valid, "errors": result.errors, "calls": result.calls,
                     "variables": result.variables})
    elif result.valid:
        print("valid")
    else:
        print("\n".join(result.errors), file=sys.stderr)
    return EXIT_OK if result.valid else EXIT_FAILED


def cmd_create(service: LackpyService, args: argparse.Namespace) -> int:
    program = _read_program(args.file)
    result = asyncio.run(service.create(program, args.kit, args.name, args.pattern))
    if args.json:
        _print_json(result)
    elif result["success"]:
        print(f"saved {result['path']}  (pattern: {result['pattern']})")
    else:
        print("\n".join(result["errors"]), file=sys.stderr)
    return EXIT_OK if result["success"] else EXIT_FAILED


def cmd_kit(service: LackpyService, args: argparse.Namespace) -> int:
    if args.kit_command == "list":
        kits = service.kit_list()
        rows = [f"{kit['name']:20} {kit['source']:10} {kit['path']}" for kit in kits]
        return _show(args, kits, "\n".join(rows))
    if args.kit_command == "info":
        info = service.kit_info(args.kit)
        grade = info["grade"]
        return _show(args, info, f"grade: w={grade['w']} d={grade['d']}\n{info['description']}")
    tools = [name.strip() for name in args.tools.split(",") if name.strip()]
    made = service.kit_create(args.name, tools, args.description)
    return _show(args, made, f"saved {made['path']}")


def cmd_toolbox(service: LackpyService, args: argparse.Namespace) -> int:
    if args.check:
        return _check_tool_sources(service, args)
    tools = service.toolbox_list()
    rows = [f"{t['name']:18} w={t['grade_w']} d={t['effects_ceiling']}  {t['provider']:10} "
            f"{t['description']}" for t in tools]
    for status in service.tool_sources.statuses():
        if status.error:
            print(f"lackpy: {status.error} (lackpy toolbox --check)", file=sys.stderr)
    return _show(args, tools, "\n".join(rows))


def _check_tool_sources(service: LackpyService, args: argparse.Namespace) -> int:
    sources = service.check_tool_sources()
    rows = []
    for source in sources:
        state = "ok" if source["ok"] else source["state"]
        tools = ", ".join(source["tools"]) or "no tools"
        rows.append(f"{source['name']:14} {source['plugin']:7} {state:7} {source['origin']}")
        rows.append(f"    {source['error']}" if source["error"] else f"    tools: {tools}")
        rows += [f"    problem: {problem}" for problem in source["problems"]]
        rows += [f"    warning: {warning}" for warning in source["warnings"]]
    _show(args, sources, "\n".join(rows) or "no tool sources: add [tools.providers.NAME] "
          "tables to .lackpy/config.toml")
    return EXIT_OK if all(source["ok"] for source in sources) else EXIT_FAILED


def cmd_templates(service: LackpyService, args: argparse.Namespace) -> int:
    listing = service.templates_list()
    rows = [f"{t['name']:24} {t['success_count']:>4} ok {t['fail_count']:>4} failed  "
            f"{t['pattern']}" for t in listing["templates"]]
    rows += [f"skipped: {problem}" for problem in listing["problems"]]
    return _show(args, listing, "\n".join(rows) or "no templates yet")


def cmd_providers(service: LackpyService, args: argparse.Namespace) -> int:
    providers = service.providers_list()
    rows = [f"{p['name']:22} {'available' if p['available'] else 'unavailable':12} "
            f"{p['reason'] or ''}" for p in providers]
    return _show(args, providers, "\n".join(rows))


def cmd_usage(service: LackpyService, args: argparse.Namespace) -> int:
    report = workspace_usage(service.config_dir, args.since)
    return _show(args, report.to_dict(), report.text())


def _show(args: argparse.Namespace, data: object, text: str) -> int:
    if args.json:
        _print_json(data)
    else:
        print(text)
    return EXIT_OK


def _print_outcome(stdout: str, success: bool, output: object, error: str | None) -> None:
    sys.stdout.write(stdout)
    if not success:
        print(f"lackpy: {error}", file=sys.stderr)
    elif output is not None:
        text = output_text(output)
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _print_json(data: object) -> None:
    print(json.dumps(jsonable(data), indent=2))


# -- lackpy plan: saved plans (.lackpy/plans/NAME.json), runs in .lackpy/plans.sqlite --------


def _add_plan_commands(commands: Subcommands, common: argparse.ArgumentParser) -> None:
    plans = commands.add_parser("plan", parents=[common], help="run, resume and inspect plans",
                                description="run, resume and inspect saved plans")
    actions = plans.add_subparsers(dest="plan_command", required=True, metavar="ACTION")
    registry = argparse.ArgumentParser(add_help=False)
    registry.add_argument("--registry", metavar="MODULE:NAME",
                          help="a dict of the plan's Python callables by name")
    remote = _temporal_options(required=False)
    run = actions.add_parser("run", parents=[common, registry, remote],
                             help="run a saved plan on a task")
    run.add_argument("name")
    run.add_argument("task", help="the task; a Python literal where it parses as one")
    run.add_argument("--key", help="checkpoint the run under this key, to resume it later")
    resume = actions.add_parser("resume", parents=[common, registry, remote],
                                help="continue a paused, failed or killed run")
    resume.add_argument("key")
    resume.add_argument("--approve", action="store_true",
                        help="let the file change the run paused on land (the one its pause "
                             "showed, as `lackpy plan status KEY` does); another change pauses "
                             "again")
    actions.add_parser("restart", parents=[common, registry],
                       help="start a checkpointed run over from its first step").add_argument("key")
    actions.add_parser("status", parents=[common, remote],
                       help="list runs, or show one").add_argument("key", nargs="?")
    actions.add_parser("list", parents=[common], help="list the saved plans")


def _temporal_options(*, required: bool) -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--temporal", metavar="ADDRESS", required=required,
                         help="the Temporal server (HOST:PORT) whose workers run the plan")
    options.add_argument("--task-queue", metavar="Q",
                         help="the task queue the workers serve (default: lackpy)")
    options.add_argument("--namespace", help="the Temporal namespace (default: default)")
    return options


def _add_worker_command(commands: Subcommands) -> None:
    workspace = argparse.ArgumentParser(add_help=False)
    workspace.add_argument("--workspace", type=Path, default=None,
                           help="the folder steps run in (default: the current directory)")
    worker = commands.add_parser(
        "worker", parents=[workspace, _temporal_options(required=True)],
        help="run plan steps for a Temporal task queue (needs the temporal extra)",
        description="serve a Temporal task queue: run the plan workflows and their steps, each "
                    "in this worker's sandbox, in --workspace, until Ctrl-C or SIGTERM")
    worker.add_argument("--concurrency", type=int, default=4, metavar="N",
                        help="steps run at once (default: 4)")
    worker.add_argument("--registry", metavar="MODULE:NAME",
                        help="a dict of the plans' Python callables by name")
    worker.add_argument("--store", type=Path, metavar="PATH",
                        help="the Store steps write to (default: WORKSPACE/.lackpy/plans.sqlite)")


def cmd_plan(service: LackpyService, args: argparse.Namespace) -> int:
    if getattr(args, "temporal", None):
        return _plan_on_temporal(service, args)
    if getattr(args, "task_queue", None) or getattr(args, "namespace", None):
        raise UsageError("--task-queue and --namespace go with --temporal ADDRESS")
    library = PlanLibrary(service.workspace)
    try:
        if args.plan_command == "list":
            return _show(args, library.names(), "\n".join(library.names()) or "no saved plans")
        if args.plan_command == "status":
            return _plan_status(library, args)
        registry = _plan_registry(args.registry)
        if args.plan_command == "run":
            plan = library.load(args.name, registry, service=service, checkpoint_key=args.key)
            envelope = plan.run(parse_param(f"task={args.task}")[1])
        else:
            plan = library.plan_for(args.key, registry, service=service,
                                    resume=args.plan_command == "resume")
            envelope = plan.run(approve=args.approve) if args.plan_command == "resume" \
                else plan.restart()
        key = plan.checkpoint_key
        waits = _waits_for_approval(library, key, envelope)
    finally:
        library.close()
    if args.json:
        _print_json(envelope.to_dict())
    else:
        _print_envelope(envelope, key, " --approve" if waits else "")
    return EXIT_OK if envelope.ok else EXIT_FAILED


def _waits_for_approval(library: PlanLibrary, key: str | None, envelope: Envelope) -> bool:
    """Whether the run under ``key`` paused on a file change, which a resume approves."""
    if key is None or envelope.error is None or envelope.error.type != "PlanPaused":
        return False
    run = library.run(key)
    return run is not None and run.change is not None


def _plan_registry(spec: str | None) -> dict[str, Any]:
    if spec is None:
        return {}
    module_name, _, attribute = spec.partition(":")
    try:
        registry = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise UsageError(f"--registry {spec}: {exc}; give MODULE:NAME of a dict") from None
    if not isinstance(registry, dict):
        raise UsageError(f"--registry {spec} is a {type(registry).__name__}, not a dict")
    return registry


def _plan_status(library: PlanLibrary, args: argparse.Namespace) -> int:
    runs = _runs(library, args.key)
    rows = [f"{run.key:24} {run.status:8} {run.plan or '-':16} next: {run.next_step or '-':14} "
            f"done: {', '.join(run.completed_steps) or '-'}"
            + (f"\n{'':24} {run.error['type']}: {run.error['message']}" if run.error else "")
            for run in runs]
    return _show(args, [run.to_dict() for run in runs], "\n".join(rows) or "no plan runs yet")


def _runs(library: PlanLibrary, key: str | None) -> list[RunStatus]:
    """The run under ``key``, or every run without one; raises UsageError for no such run."""
    if not key:
        return library.runs()
    run = library.run(key)
    if run is None:
        raise UsageError(f"no plan run under the key {key!r}")
    return [run]


def _print_envelope(envelope: Envelope, key: str | None, resume: str = "") -> None:
    for result in envelope.history:
        print(f"{result.name:24} done  {result.ms:9.1f} ms")
    if envelope.error is not None:
        hint = f"\n`lackpy plan resume {key}{resume}` continues there" if key else ""
        print(f"lackpy: {envelope.error.type}: {envelope.error.message}{hint}", file=sys.stderr)
        return
    print("--- output")
    _print_outcome("", True, envelope.payload, None)


# -- Temporal: lackpy worker, lackpy plan run/resume/status --temporal ADDRESS -----------------


def _plan_on_temporal(service: LackpyService, args: argparse.Namespace) -> int:
    global _temporal_used
    _temporal_used = True
    from lackpy_kernel.engines.temporal import TemporalRunner  # noqa: PLC0415 - optional extra

    runner = TemporalRunner(args.temporal, args.namespace or "default",
                            args.task_queue or "lackpy")
    if args.plan_command == "status":
        return asyncio.run(_temporal_status(runner, args))
    if args.plan_command == "run":
        library = PlanLibrary(service.workspace)
        try:
            plan = library.load(args.name, _plan_registry(args.registry), service=service,
                                checkpoint_key=args.key)
        finally:
            library.close()
        task = parse_param(f"task={args.task}")[1]
        key, envelope = asyncio.run(_temporal_run(runner, plan, task))
    else:
        key, envelope = args.key, asyncio.run(runner.resume(args.key, approve=args.approve))
    if args.json:
        _print_json({"key": key, **envelope.to_dict()})
    else:
        _print_envelope(envelope, key, f" --temporal {args.temporal}")
    return EXIT_OK if envelope.ok else EXIT_FAILED


async def _temporal_run(runner: TemporalRunner, plan: Plan, task: object) -> tuple[str, Envelope]:
    key = await runner.start(plan, task)
    print(f"started {key} on Temporal at {runner.address}; a `lackpy worker` on the task queue "
          f"{runner.task_queue!r} runs it", file=sys.stderr)
    return key, await runner.wait(key)


async def _temporal_status(runner: TemporalRunner, args: argparse.Namespace) -> int:
    if args.key is None:
        runs = await runner.runs()
        return _show(args, [{"key": key, "status": status} for key, status in runs],
                     "\n".join(f"{key:32} {status}" for key, status in runs)
                     or "no plan runs on this server yet")
    run = await runner.status(args.key)
    lines = [f"{run.key}  {run.status}  plan: {run.plan or '-'}  task: {run.task!r}",
             table_bundle(list(run.COLUMNS), run.rows())["text/plain"]]
    if run.error:
        lines.append(f"{run.error['type']}: {run.error['message']}")
    if run.trace_rows():
        lines += ["--- tool calls",
                  table_bundle(list(run.TRACE_COLUMNS), run.trace_rows())["text/plain"]]
    text = "\n".join(line.rstrip() for block in lines for line in block.splitlines())
    return _show(args, run.to_dict(), text)


def cmd_worker(service: LackpyService, args: argparse.Namespace) -> int:
    global _temporal_used
    _temporal_used = True
    from lackpy_kernel.engines.temporal import serve  # noqa: PLC0415 - optional extra

    namespace, queue = args.namespace or "default", args.task_queue or "lackpy"

    def ready(worker: TemporalWorker) -> None:
        print(f"lackpy worker {worker.identity}: serving the task queue {queue!r} at "
              f"{args.temporal} (namespace {namespace}), workspace {worker.workspace}, "
              f"{args.concurrency} steps at once; Ctrl-C stops it", flush=True)

    asyncio.run(serve(args.temporal, namespace=namespace, task_queue=queue,
                      workspace=service.workspace, registry=_plan_registry(args.registry),
                      concurrency=args.concurrency, config=service.config, store=args.store,
                      on_ready=ready))
    print("lackpy worker: stopped", flush=True)
    return EXIT_OK


COMMANDS = {
    "delegate": cmd_delegate, "generate": cmd_generate, "run": cmd_run,
    "validate": cmd_validate, "create": cmd_create, "kit": cmd_kit, "toolbox": cmd_toolbox,
    "templates": cmd_templates, "providers": cmd_providers, "plan": cmd_plan,
    "worker": cmd_worker, "usage": cmd_usage,
}


if __name__ == "__main__":
    entry()
