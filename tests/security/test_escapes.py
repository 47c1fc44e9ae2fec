"""Escape attempts: every one is refused by the validator or confined at run time.

Each attack runs through the real runner with the real file tools, in a
workspace that sits next to a secret file. An attack fails if the program
succeeds, if the secret shows up anywhere in what comes back, or if a canary
file appears outside the workspace or in its ``.lackpy/`` folder.
"""

import os

import pytest

from lackpy_kernel.kit import builtin_toolbox, resolve_kit
from lackpy_kernel.lang import validate
from lackpy_kernel.run import RestrictedRunner

SECRET = "TOP-SECRET-7f3a"
ALL_TOOLS = ["read_file", "find_files", "write_file", "edit_file", "find_definitions", "find_callers"]


@pytest.fixture
def arena(tmp_path):
    return make_arena(tmp_path)


def make_arena(tmp_path):
    """A workspace in ``tmp_path`` beside a secret it must not reach, with links out of it,
    into its ``.lackpy`` and in a loop; (workspace, the secret's folder)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    evil_sibling = tmp_path / "ws-evil"
    evil_sibling.mkdir()
    (evil_sibling / "secret.txt").write_text(SECRET)
    (workspace / "a.txt").write_text("hello")
    (workspace / "fmt.txt").write_text("{0.__globals__}")
    (workspace / "sub").mkdir()
    (workspace / ".lackpy" / "kits").mkdir(parents=True)
    (workspace / ".lackpy" / "config.toml").write_text("[kit]\ndefault = 'debug'\n")
    (workspace / "link_out.txt").symlink_to(outside / "secret.txt")
    (workspace / "linkdir").symlink_to(outside)
    (workspace / "link_lackpy").symlink_to(workspace / ".lackpy")
    (workspace / "loop_a").symlink_to(workspace / "loop_b")
    (workspace / "loop_b").symlink_to(workspace / "loop_a")
    return workspace, outside


def attempt(arena, program):
    workspace, outside = arena
    kit = resolve_kit(ALL_TOOLS, builtin_toolbox(workspace))
    before = sorted(os.listdir(outside)), (workspace / ".lackpy" / "config.toml").read_text()
    result = RestrictedRunner().run(program, kit.callables)
    shown = " ".join(map(str, [result.output, result.stdout, result.error, result.trace]))
    assert SECRET not in shown, f"secret leaked by {program!r}"
    after = sorted(os.listdir(outside)), (workspace / ".lackpy" / "config.toml").read_text()
    assert before == after, f"{program!r} changed something it must not"
    assert not (workspace.parent / "pwned.txt").exists()
    return result


DUNDER_TRAVERSAL = [
    "().__class__.__bases__[0].__subclasses__()",
    "x = []\nx.__class__",
    "read_file.__globals__",
    "read_file.__closure__",
    "len.__self__",
    "str.__dict__",
    "'a'.__class__.__mro__",
    "d = {}\nd.__init__",
    "print.__call__",
    "x = read_file\nx.__wrapped__",
    "str.mro()",
    "int.mro()[1]",
    "[x for x in ().__class__.__bases__]",
    "{**read_file.__dict__}",
    "x = zip([1])\nx.__next__()",
    "x = range(3)\nx.__reduce_ex__(2)",
    "x = enumerate([1])\nx.__reduce__()",
    "'abc'.upper.__self__",
    "[].append.__self__",
    "sorted.__module__",
    "x = {}\nx._private",
]

BUILTINS_RECOVERED = [
    "import os",
    "from os import system",
    "__import__('os')",
    "open('/etc/passwd')",
    "eval('1')",
    "exec('import os')",
    "compile('1', 'x', 'eval')",
    "getattr(1, '__class__')",
    "globals()",
    "vars()",
    "locals()",
    "dir()",
    "__builtins__",
    "breakpoint()",
    "type(1)",
    "input()",
    "memoryview('x')",
    "help()",
    "x = isinstance\nx.__self__",
    "read_file.func_globals",
    "x: __import__('os') = 1",
    "sys.modules",
    "x = __loader__",
    "__spec__",
    "𝐞𝐯𝐚𝐥('1')",
    "ｏｐｅｎ('x')",
]

FORMAT_STRINGS = [
    "'{0.__class__}'.format(1)",
    "('{0._' + '_class__}').format(1)",
    "p = '{0' + '.' + '_' + '_globals_' + '_}'\np.format(read_file)",
    "fmt = read_file('fmt.txt')\nfmt.format(read_file)",
    "fmt = read_file('fmt.txt')\nfmt.format_map({'x': read_file})",
    "f = 'abc'.format\nf(1)",
    "f'{read_file.__globals__}'",
    "f\"{'{0.__class__}'.format(1)}\"",
    "str.format('{0.__class__}', 1)",
    "f'{read_file!r:{\"__\"}}'",
]

LAMBDA_TRICKS = [
    "f = lambda: 0",
    "(lambda x: x)(1)",
    "sorted([1], key=lambda x: x.__class__)",
    "sorted([read_file], key=lambda f: f.__globals__)",
    "sorted([1], key=lambda x, y=open: y)",
    "sorted([1], key=lambda *a: a)",
    "sorted([1], key=(lambda x: x)(1))",
    "d = {'key': lambda x: x}",
]

# sort_by's key= may be a lambda, as sorted's: each is refused by the validator as sorted's is.
SORT_BY_KEY_TRICKS = [
    "sort_by([{'a': 1}], key=lambda r: r.__class__)",
    "sort_by([read_file], key=lambda f: f.__globals__)",
    "sort_by(['{0.__class__}'], key=lambda s: s.format(1))",
    "sort_by([{'a': 1}], key=lambda r, y=open: y)",
    "sort_by([{'a': 1}], key=lambda *a: a)",
    "sort_by([{'a': 1}], key=lambda r: open('/etc/passwd'))",
    "sort_by([{'a': 1}], key=lambda r: getattr(r, '__class__'))",
    "sort_by([{'a': 1}], key=lambda r: eval('1'))",
    "sort_by([{'a': 1}], key=lambda r: send_home(r))",
    "sort_by([{'a': 1}], key=lambda r: (lambda: r))",
    "sort_by([{'a': 1}], key=lambda read_file: 1)",
    "sort_by([{'a': 1}], lambda r: r)",
    "sort_by([{'a': 1}], 'a', lambda r: r)",
    "sort_by([{'a': 1}], key=(lambda r: r)(1))",
]

FRAMES_AND_EXCEPTIONS = [
    "x = (i for i in [1])",
    "x = [1]\nx.gi_frame",
    "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__",
    "x = 1\nx.tb_frame",
    "x = 1\nx.f_globals",
    "x = 1\nx.co_code",
    "x = 1\nx.cr_frame",
    "raise SystemExit",
    "def f():\n    yield 1",
    "async def f():\n    pass",
    "while True:\n    pass",
    "x = 1\ndel x",
    "global x",
]

TOOL_BOUNDARY = [
    "r = find_files('*')\nr.__class__",
    "x = read_file('a.txt')\nx.__class__.__base__",
    "read_file(read_file)",
    "read_file(enumerate([1]))",
    "write_file('b.txt', print)",
    "read_file.x = 1",
    "read_file = len",
    "[len][0]('x')",
    "read_file('a.txt')('x')",
    "print('x', file=read_file)",
    "with read_file('a.txt') as f:\n    f",
    "isinstance(1, read_file)",
]

PATHS = [
    "read_file('../outside/secret.txt')",
    "read_file('sub/../../outside/secret.txt')",
    "read_file('link_out.txt')",
    "read_file('linkdir/secret.txt')",
    "read_file('../ws-evil/secret.txt')",
    "read_file(0)",
    "read_file(3)",
    "read_file('')",
    "read_file('loop_a')",
    "read_file('~/.bashrc')",
    "read_file('/etc/passwd')",
    "write_file('../pwned.txt', 'x')",
    "write_file('link_out.txt', 'x')",
    "write_file('linkdir/pwned.txt', 'x')",
    "write_file('.lackpy/config.toml', 'x')",
    "write_file('sub/../.lackpy/config.toml', 'x')",
    "write_file('link_lackpy/config.toml', 'x')",
    "write_file('.lackpy/kits/evil.kit', 'x')",
    "edit_file('.lackpy/config.toml', 'debug', 'evil')",
    "edit_file('link_out.txt', 'TOP', 'x')",
    "write_file(1, 'x')",
]

ATTACKS = (
    DUNDER_TRAVERSAL + BUILTINS_RECOVERED + FORMAT_STRINGS + LAMBDA_TRICKS + SORT_BY_KEY_TRICKS
    + FRAMES_AND_EXCEPTIONS + TOOL_BOUNDARY + PATHS
)


def test_the_suite_is_big_enough():
    assert len(ATTACKS) >= 60
    assert len(set(ATTACKS)) == len(ATTACKS)


@pytest.mark.parametrize("program", ATTACKS)
def test_attack_is_refused_or_confined(arena, program):
    result = attempt(arena, program)
    assert not result.success, f"{program!r} succeeded with {result.output!r}"


@pytest.mark.parametrize("program", SORT_BY_KEY_TRICKS)
def test_a_hostile_sort_by_key_lambda_is_refused_as_sorteds_is(arena, program):
    result = attempt(arena, program)
    assert result.error_type == "LackpyValidationError"
    as_sorted = validate(program.replace("sort_by", "sorted"), ALL_TOOLS, protected_names=ALL_TOOLS)
    assert [issue.message for issue in result.issues] == [issue.message for issue in as_sorted.issues]


def test_a_key_lambda_never_reaches_a_tool_named_sort_by(arena):
    workspace, _ = arena
    kit = resolve_kit({"sort_by": "read_file"}, builtin_toolbox(workspace))
    result = RestrictedRunner().run("sort_by('a.txt', key=lambda r: r)", kit.callables)
    assert not result.success and "takes plain data, not function" in result.error


@pytest.mark.parametrize("program", PATHS)
def test_path_attacks_fail_in_the_tool_with_a_clear_error(arena, program):
    result = attempt(arena, program)
    assert result.error_type != "LackpyValidationError"
    assert result.trace.entries and not result.trace.entries[-1].success


@pytest.mark.parametrize(
    "pattern", ["../*", "../**/*", "/*", "/**/*", "**/../../*", "linkdir/*", "loop_a/**", "../ws-evil/*"]
)
def test_globs_stay_inside_the_workspace(arena, pattern):
    workspace, _ = arena
    result = attempt(arena, f"find_files({pattern!r})")
    for path in result.output or []:
        real = os.path.realpath(workspace / path)
        assert os.path.commonpath([real, str(workspace)]) == str(workspace), path


def test_a_dunder_string_built_at_run_time_is_harmless(arena):
    result = attempt(arena, "k = '_' + '_class_' + '_'\nd = {k: 1}\nd[k]")
    assert result.success and result.output == 1
