"""No hook lets a config key or an environment variable make a program's process run code it
was not given (issue 40): the escapes of ``test_warm_process_leftovers`` are simulated by a
kit's Python tool, so a built wheel has no test-only switch to reach.

Shown two ways. The environment: every read of it in the sandbox layer
(``lackpy_kernel/run/``), and in every module of ours a program's process has loaded, is
one of a list made by reading that code (``WHOLE``: the whole environment, or a variable
named at run time), found by parsing the sources, so a new read fails here until someone
looks at it. The config: ``[sandbox]`` takes exactly its known keys, and any other key or
section stops the service before it runs anything.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import fields
from pathlib import Path

import pytest

import lackpy_kernel
from lackpy_kernel.config import SCHEMA, LackpyConfig, load_config
from lackpy_kernel.errors import ConfigError
from lackpy_kernel.run import SandboxLimits, sandbox_supported
from lackpy_kernel.service import LackpyService

PACKAGE = Path(lackpy_kernel.__file__).resolve().parent
SANDBOX_LAYER = PACKAGE / "run"
WHOLE = "*"  # the whole environment, or a variable whose name is not a constant
ENVIRONMENT = {"environ", "environb", "getenv", "getenvb"}  # os's (and posix's) readers
GETTERS = {"getenv", "getenvb"}

# (file, function, variable): every read of the environment there is, found by reading the code
READS = {
    # the worker's environment is the kernel's, with our package importable (``PYTHONPATH``
    # read from that copy, not from os.environ); nothing in the worker or a child reads it
    ("run/spawn.py", "_worker_env", WHOLE),
    # where the undo key lives: a folder, never code
    ("kit/undo_record.py", "key_path", "LACKPY_STATE_DIR"),
    ("kit/undo_record.py", "key_path", "LOCALAPPDATA"),
    ("kit/undo_record.py", "key_path", "XDG_STATE_HOME"),
    # ``${VAR}`` in an MCP server's env or headers: passed to that server, which the kernel runs
    ("kit/sources/mcp.py", "McpToolSource._expand.lookup", WHOLE),
}
SANDBOX_KEYS = {"enabled", "timeout", "memory_mb", "max_result_mb", "max_tool_calls",
                "approve", "workers", "reuse", "reuse_idle"}
LIMITS = {"timeout", "memory_mb", "max_result_mb", "max_tool_calls", "reuse", "reuse_idle"}

MODULES = '''
import sys


def modules() -> dict:
    """Our modules this process has loaded, and their files."""
    return {name: module.__file__ for name, module in sys.modules.items()
            if name.split(".")[0] == "lackpy_kernel" and getattr(module, "__file__", None)}
'''


def environment_reads(path: Path) -> set[tuple[str, str, str]]:
    """Each read of the environment in ``path``: (its file in the package, the function it
    is in, the variable it reads or ``WHOLE``)."""
    return reads_in(path.read_text(encoding="utf-8"), path.resolve().relative_to(PACKAGE).as_posix())


def reads_in(source: str, where: str) -> set[tuple[str, str, str]]:
    """``environment_reads`` of ``source``, the package's file ``where``."""
    tree = ast.parse(source)
    constants = {target.id: node.value.value for node in tree.body
                 if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                 and isinstance(node.value.value, str)
                 for target in node.targets if isinstance(target, ast.Name)}
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    reads = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name in ENVIRONMENT
                                                    for alias in node.names):
            reads.add((where, _function(node, parents), WHOLE))  # under any name it takes
        name = node.attr if isinstance(node, ast.Attribute) else \
            node.id if isinstance(node, ast.Name) else None
        if name in ENVIRONMENT:
            reads.add((where, _function(node, parents), _variable(node, name, parents, constants)))
    return reads


def _function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str:
    names = []
    while (node := parents.get(node)) is not None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
    return ".".join(reversed(names)) or "<module>"


def _variable(node: ast.AST, name: str, parents: dict[ast.AST, ast.AST],
              constants: dict[str, str]) -> str:
    """The variable ``node`` (``os.environ`` or ``os.getenv``) reads, else ``WHOLE``."""
    parent = parents.get(node)
    key = None
    if name in GETTERS:
        if isinstance(parent, ast.Call) and parent.func is node and parent.args:
            key = parent.args[0]
    elif isinstance(parent, ast.Subscript) and parent.value is node:
        key = parent.slice  # os.environ[KEY]
    elif isinstance(parent, ast.Attribute) and parent.attr in {"get", "pop", "setdefault"}:
        call = parents.get(parent)
        if isinstance(call, ast.Call) and call.func is parent and call.args:
            key = call.args[0]  # os.environ.get(KEY)
    elif isinstance(parent, ast.Compare) and len(parent.ops) == 1 and \
            isinstance(parent.ops[0], (ast.In, ast.NotIn)) and parent.comparators[0] is node:
        key = parent.left  # KEY in os.environ
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    if isinstance(key, ast.Name) and key.id in constants:
        return constants[key.id]
    return WHOLE


def test_the_reader_finds_every_form_of_a_read():
    """The parser above is what the two tests below rely on: each way of reading the
    environment is found, and named where its name is a constant."""
    source = textwrap.dedent('''
        import os
        from os import getenv as read
        NAME = "LACKPY_VIA_CONSTANT"

        def hooks():
            os.environ.get("LACKPY_GET")
            os.environ["LACKPY_ITEM"]
            os.getenv(NAME)
            "LACKPY_IN" in os.environ
            read("LACKPY_ALIASED")
            dict(os.environ)

        class Later:
            def hook(self, name):
                return os.environ[name]
    ''')
    reads = {(function, variable) for _, function, variable in reads_in(source, "example.py")}
    assert reads == {("<module>", WHOLE), ("hooks", "LACKPY_GET"), ("hooks", "LACKPY_ITEM"),
                     ("hooks", "LACKPY_VIA_CONSTANT"), ("hooks", "LACKPY_IN"),
                     ("hooks", WHOLE), ("Later.hook", WHOLE)}


def test_the_sandbox_layer_reads_only_the_known_variables():
    found = set().union(*(environment_reads(path) for path in sorted(SANDBOX_LAYER.rglob("*.py"))))
    assert found == {read for read in READS if read[0].startswith("run/")}


@pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")
async def test_a_program_s_process_has_loaded_no_code_that_reads_other_variables(tmp_path):
    """Every module of ours in a walled process (the worker's, which it forked with, and
    what the program's run imported), read for environment reads."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "modules.py").write_text(textwrap.dedent(MODULES))
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text(
        '[sandbox]\napprove = "never"\n\n'
        '[tools.providers.probe]\nplugin = "python"\npath = "tools/modules.py"\n')
    with LackpyService(tmp_path) as service:
        result = await service.run_program("modules()", kit="modules", session="person")
    assert result.success, result.error
    loaded = {Path(file).resolve().relative_to(PACKAGE).as_posix()
              for file in result.output.values()}
    assert {"run/child/_life.py", "run/runner.py"} <= loaded  # the child's own, at least
    found = set().union(*(environment_reads(PACKAGE / file) for file in loaded))
    assert found == {read for read in READS if read[0] in loaded}


def test_the_sandbox_section_takes_exactly_its_known_keys():
    assert set(SCHEMA["sandbox"]) == SANDBOX_KEYS
    assert {field.name.removeprefix("sandbox_") for field in fields(LackpyConfig)
            if field.name.startswith("sandbox_")} == SANDBOX_KEYS
    # what reaches a program's process of them: the limits each request carries
    assert {field.name for field in fields(SandboxLimits)} == LIMITS


@pytest.mark.parametrize("config", [
    '[sandbox]\nescape = "tools/escaping.py"\n',
    '[sandbox]\nreuse = 10\npreload = ["os.system"]\n',
    '[sandbox.hooks]\nbefore_program = "x"\n',
    '[testing]\nhook = true\n',
])
def test_any_other_sandbox_key_or_section_stops_the_service(tmp_path, config):
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text(config)
    with pytest.raises(ConfigError, match="unknown"):
        load_config(tmp_path)
    with pytest.raises(ConfigError, match="unknown"):
        LackpyService(tmp_path)
