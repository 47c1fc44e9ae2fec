"""The ``lackpy`` command: validate and run lackpy programs against a workspace."""

from __future__ import annotations

import argparse
import ast
import json
import pprint
import sys
from pathlib import Path
from typing import Any

from lackpy_kernel.kit import builtin_toolbox, resolve_kit
from lackpy_kernel.lang import validate
from lackpy_kernel.run import (
    ExecutionResult,
    RestrictedRunner,
    Sandbox,
    SandboxLimits,
    sandbox_supported,
)


def parse_param(text: str) -> tuple[str, Any]:
    """``name=value``: the value is a Python literal where it parses as one, else a string."""
    name, sep, raw = text.partition("=")
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"expected name=value, got {text!r}")
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = raw
    return name, value


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workspace", type=Path, default=Path.cwd(),
                        help="folder the tools work in (default: the current directory)")
    common.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser = argparse.ArgumentParser(prog="lackpy", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", parents=[common], help="validate and run a program file")
    run.add_argument("file", type=Path, help="the program ('-' reads standard input)")
    run.add_argument("--kit", default="debug",
                     help="kit name or comma-separated tools (default: debug)")
    run.add_argument("--param", type=parse_param, action="append", default=[],
                     metavar="NAME=VALUE", help="a named input (repeatable)")
    run.add_argument("--no-sandbox", action="store_true", help="run in this process, without limits")
    run.add_argument("--timeout", type=float, default=SandboxLimits.timeout, help="seconds")
    run.add_argument("--memory-mb", type=int, default=SandboxLimits.memory_mb)

    check = commands.add_parser("validate", parents=[common],
                                help="validate a program file without running it")
    check.add_argument("file", type=Path)
    check.add_argument("--kit", default="debug", help="kit name or comma-separated tools")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        program = sys.stdin.read() if str(args.file) == "-" else args.file.read_text()
        kit = resolve_kit(args.kit, builtin_toolbox(args.workspace),
                          kits_dir=args.workspace / ".lackpy" / "kits")
    except (OSError, KeyError, ValueError, TypeError) as exc:
        print(f"lackpy: {exc}", file=sys.stderr)
        return 2
    if args.command == "validate":
        return report_validation(validate(program, set(kit.callables)), args.json)
    result = run_program(program, args, kit)
    return report_run(result, args.json)


def run_program(program: str, args: argparse.Namespace, kit) -> ExecutionResult:
    params = dict(args.param)
    if args.no_sandbox or not sandbox_supported():
        if not args.no_sandbox:
            print("lackpy: no sandbox on this platform; running without limits", file=sys.stderr)
        return RestrictedRunner().run(program, kit.callables, params)
    limits = SandboxLimits(timeout=args.timeout, memory_mb=args.memory_mb)
    with Sandbox(args.workspace, limits, kits_dir=args.workspace / ".lackpy" / "kits") as box:
        return box.run(program, args.kit, params, keep=False, return_variables=True)


def report_validation(result, as_json: bool) -> int:
    if as_json:
        print(json.dumps({"valid": result.valid, "errors": result.errors, "calls": result.calls,
                          "variables": result.variables}, indent=2))
    elif result.valid:
        print("valid")
    else:
        print("\n".join(result.errors), file=sys.stderr)
    return 0 if result.valid else 1


def report_run(result: ExecutionResult, as_json: bool) -> int:
    if as_json:
        data = result.to_dict()
        print(json.dumps(data, indent=2, default=repr))
        return 0 if result.success else 1
    sys.stdout.write(result.stdout)
    if result.success:
        if result.output is not None:
            print(result.output if isinstance(result.output, str) else pprint.pformat(result.output))
    else:
        print(f"lackpy: {result.error}", file=sys.stderr)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main())
