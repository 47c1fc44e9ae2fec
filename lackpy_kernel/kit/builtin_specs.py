"""The specs of the built-in file tools: arguments, grades, examples and docs."""

from __future__ import annotations

from .spec import BUILTIN_PROVIDER, ArgSpec, Grade, ToolSpec

PROVIDER_NAME = BUILTIN_PROVIDER
READ_GRADE: Grade = {"grade_w": 1, "effects_ceiling": 1}
WRITE_GRADE: Grade = {"grade_w": 3, "effects_ceiling": 3}


def tool_specs() -> list[ToolSpec]:
    """Fresh specs for the six file tools: four read-only, two that write."""
    return [
        _read_file_spec(),
        _find_files_spec(),
        _find_definitions_spec(),
        _find_callers_spec(),
        _write_file_spec(),
        _edit_file_spec(),
    ]


def _docs(tool: str) -> str:
    return f"kit/docs/{tool}.md"  # relative to the lackpy_kernel package folder


def _path_arg(description: str) -> ArgSpec:
    return ArgSpec("path", "str", description)


def _read_file_spec() -> ToolSpec:
    return ToolSpec(
        name="read_file",
        provider=PROVIDER_NAME,
        description="Read a UTF-8 text file in the workspace and return its content.",
        args=[_path_arg("file path relative to the workspace root")],
        returns="str",
        examples=[
            {
                "intent": "read the file pyproject.toml",
                "code": "content = read_file('pyproject.toml')\ncontent",
                "tags": ["read", "file"],
            },
            {
                "intent": "count the lines of README.md",
                "code": "len(read_file('README.md').splitlines())",
                "tags": ["read", "count", "lines"],
            },
        ],
        docs=_docs("read_file"),
        **READ_GRADE,
    )


def _find_files_spec() -> ToolSpec:
    return ToolSpec(
        name="find_files",
        provider=PROVIDER_NAME,
        description=(
            "List the workspace files matching a glob pattern ('**' spans folders), "
            "as sorted paths relative to the workspace root."
        ),
        args=[ArgSpec("pattern", "str", "glob relative to the workspace, e.g. '**/*.py'")],
        returns="list[str]",
        examples=[
            {
                "intent": "find all python files",
                "code": "files = find_files('**/*.py')\nfiles",
                "tags": ["find", "glob", "files"],
            },
            {
                "intent": "how many markdown files are in docs",
                "code": "len(find_files('docs/**/*.md'))",
                "tags": ["find", "count", "files"],
            },
        ],
        docs=_docs("find_files"),
        **READ_GRADE,
    )


def _find_definitions_spec() -> ToolSpec:
    return ToolSpec(
        name="find_definitions",
        provider=PROVIDER_NAME,
        description=(
            "Find the functions and classes with this name in the workspace's Python "
            "files; each result is a dict with file, line, kind and name."
        ),
        args=[ArgSpec("name", "str", "function or class name, e.g. 'load_config'")],
        returns="list[dict]",
        examples=[
            {
                "intent": "find the definition of load_config",
                "code": "results = find_definitions('load_config')\nresults",
                "tags": ["find", "definition", "python"],
            },
            {
                "intent": "which files define a class named Config",
                "code": ("[d['file'] for d in find_definitions('Config') if d['kind'] == 'class']"),
                "tags": ["find", "definition", "class"],
            },
        ],
        docs=_docs("find_definitions"),
        **READ_GRADE,
    )


def _find_callers_spec() -> ToolSpec:
    return ToolSpec(
        name="find_callers",
        provider=PROVIDER_NAME,
        description=(
            "Find the calls of a function or method with this name in the workspace's "
            "Python files; each result is a dict with file, line, caller and text."
        ),
        args=[ArgSpec("name", "str", "name of the called function or method")],
        returns="list[dict]",
        examples=[
            {
                "intent": "find all callers of validate",
                "code": "results = find_callers('validate')\nresults",
                "tags": ["find", "callers", "usages"],
            },
            {
                "intent": "which functions call resolve_kit",
                "code": "sorted({c['caller'] for c in find_callers('resolve_kit')})",
                "tags": ["find", "callers", "functions"],
            },
        ],
        docs=_docs("find_callers"),
        **READ_GRADE,
    )


def _write_file_spec() -> ToolSpec:
    return ToolSpec(
        name="write_file",
        provider=PROVIDER_NAME,
        description=(
            "Create or replace a text file in the workspace (atomically; parent folders "
            "are created) and return a short confirmation."
        ),
        args=[
            _path_arg("file path relative to the workspace root"),
            ArgSpec("content", "str", "the complete new text of the file"),
        ],
        returns="str",
        examples=[
            {
                "intent": "write hello world to notes/hello.txt",
                "code": "write_file('notes/hello.txt', 'hello world\\n')",
                "tags": ["write", "file", "create"],
            },
            {
                "intent": "save the list of python files to files.txt",
                "code": "write_file('files.txt', '\\n'.join(find_files('**/*.py')))",
                "tags": ["write", "file", "list"],
            },
        ],
        docs=_docs("write_file"),
        **WRITE_GRADE,
    )


def _edit_file_spec() -> ToolSpec:
    return ToolSpec(
        name="edit_file",
        provider=PROVIDER_NAME,
        description=(
            "Replace the one occurrence of old with new in a workspace text file "
            "(atomically); fails when old occurs zero or several times."
        ),
        args=[
            _path_arg("file path relative to the workspace root"),
            ArgSpec("old", "str", "exact text to replace; must occur exactly once"),
            ArgSpec("new", "str", "replacement text"),
        ],
        returns="str",
        examples=[
            {
                "intent": "change the version in pyproject.toml from 0.1.0 to 0.2.0",
                "code": ("edit_file('pyproject.toml', 'version = \"0.1.0\"', 'version = \"0.2.0\"')"),
                "tags": ["edit", "file", "replace"],
            },
            {
                "intent": "rename the function old_name to new_name in src/app.py",
                "code": "edit_file('src/app.py', 'def old_name(', 'def new_name(')",
                "tags": ["edit", "rename"],
            },
        ],
        docs=_docs("edit_file"),
        **WRITE_GRADE,
    )
