"""ToolSpec, ArgSpec and the Toolbox."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from lackpy_kernel.kit import ArgSpec, Toolbox, ToolSpec, UnknownToolError


class EchoProvider:
    name = "echo"

    def __init__(self, docs_dir: Path | None = None) -> None:
        self.docs_dir = docs_dir
        self.resolved: list[str] = []

    def tool_specs(self) -> list[ToolSpec]:
        return [
            ToolSpec(
                name="echo",
                provider=self.name,
                description="Return the text unchanged.",
                args=[ArgSpec("text", "str", "what to echo")],
                returns="str",
                grade_w=0,
                effects_ceiling=0,
                docs="echo.md",
            ),
            ToolSpec(name="shout", provider=self.name),
        ]

    def resolve(self, spec: ToolSpec):
        self.resolved.append(spec.name)
        return (lambda text: text) if spec.name == "echo" else (lambda text: text.upper())


class DocsProvider(EchoProvider):
    def resolve_docs(self, spec: ToolSpec) -> Path | None:
        return self.docs_dir / spec.docs if self.docs_dir else None


def test_spec_defaults():
    spec = ToolSpec(name="t", provider="p")
    assert spec.provider_config == {} and spec.args == [] and spec.examples == []
    assert (spec.description, spec.returns, spec.grade_w, spec.effects_ceiling, spec.docs) == (
        "",
        "Any",
        3,
        3,
        None,
    )
    assert ToolSpec(name="u", provider="p").args is not spec.args
    assert ArgSpec("x") == ArgSpec(name="x", type="Any", description="")


def test_register_provider_and_resolve():
    toolbox = Toolbox()
    provider = EchoProvider()
    toolbox.register_provider(provider)
    assert [spec.name for spec in toolbox.list_tools()] == ["echo", "shout"]
    assert toolbox.resolve("shout")("hi") == "HI"
    assert provider.resolved == ["shout"]  # resolved on demand
    assert "echo" in toolbox and "nope" not in toolbox


def test_register_provider_checks_shape():
    with pytest.raises(TypeError, match="name"):
        Toolbox().register_provider(object())

    class NoResolve:
        name = "x"

    with pytest.raises(TypeError, match="resolve"):
        Toolbox().register_provider(NoResolve())


def test_register_tool_with_fn_and_overwrite():
    toolbox = Toolbox()
    toolbox.register_tool(ToolSpec(name="add", provider="inline"), fn=lambda a, b: a + b)
    assert toolbox.resolve("add")(2, 3) == 5
    toolbox.register_tool(ToolSpec(name="add", provider="inline", returns="int"), fn=lambda a, b: 0)
    assert toolbox.resolve("add")(2, 3) == 0
    assert [spec.returns for spec in toolbox.list_tools()] == ["int"]


def test_registration_order_is_kept():
    toolbox = Toolbox()
    for name in ["zeta", "alpha", "mid"]:
        toolbox.register_tool(ToolSpec(name=name, provider="p"), fn=print)
    assert [spec.name for spec in toolbox.list_tools()] == ["zeta", "alpha", "mid"]


def test_tool_without_fn_and_without_provider():
    toolbox = Toolbox()
    toolbox.register_tool(ToolSpec(name="orphan", provider="missing"))
    with pytest.raises(KeyError, match="provider 'missing'"):
        toolbox.resolve("orphan")


@pytest.mark.parametrize("name", ["", "1abc", "has space", "a-b", "class", None])
def test_invalid_tool_names(name):
    with pytest.raises(ValueError, match="identifier"):
        Toolbox().register_tool(ToolSpec(name=name, provider="p"), fn=print)


def test_fn_must_be_callable():
    with pytest.raises(TypeError, match="callable"):
        Toolbox().register_tool(ToolSpec(name="t", provider="p"), fn="not callable")


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("json", "standard library module"),
        ("os", "standard library module"),
        ("len", "builtin"),
        ("open", "builtin"),
        ("print", "builtin"),
    ],
)
def test_masking_names_warn(name, what):
    with pytest.warns(UserWarning, match=f"masks the .*{what}.*'{name}'"):
        Toolbox().register_tool(ToolSpec(name=name, provider="p"), fn=print)


def test_ordinary_names_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Toolbox().register_tool(ToolSpec(name="read_file", provider="p"), fn=print)
        Toolbox().register_tool(ToolSpec(name="find_files", provider="p"), fn=print)


def test_unknown_tool_suggests_close_matches():
    toolbox = Toolbox()
    toolbox.register_provider(EchoProvider())
    with pytest.raises(UnknownToolError) as caught:
        toolbox.resolve("ecko")
    assert isinstance(caught.value, KeyError)
    message = str(caught.value)
    assert "unknown tool 'ecko'" in message and "did you mean 'echo'" in message
    assert not message.startswith('"')  # readable, not KeyError's repr quoting
    with pytest.raises(KeyError, match="registered tools: none"):
        Toolbox().resolve("anything")


def test_format_description():
    toolbox = Toolbox()
    toolbox.register_provider(EchoProvider())
    assert toolbox.format_description(["echo", "missing", "shout"]) == (
        "echo(text: str) -> str: Return the text unchanged.\nshout() -> Any"
    )
    assert toolbox.format_description([]) == ""


def test_docs_index_and_resolve_docs_from_root(tmp_path):
    (tmp_path / "echo.md").write_text("# echo")
    toolbox = Toolbox()
    toolbox.register_provider(EchoProvider())
    assert toolbox.docs_index() == {"echo": "echo.md"}
    assert toolbox.resolve_docs("echo", tmp_path) == (tmp_path / "echo.md").resolve()
    assert toolbox.resolve_docs("shout", tmp_path) is None
    assert toolbox.resolve_docs("echo", tmp_path / "elsewhere") is None
    with pytest.raises(KeyError):
        toolbox.resolve_docs("nope", tmp_path)


def test_resolve_docs_prefers_the_provider(tmp_path):
    toolbox = Toolbox()
    toolbox.register_provider(DocsProvider(tmp_path / "provider-docs"))
    assert toolbox.resolve_docs("echo", tmp_path) == tmp_path / "provider-docs" / "echo.md"


def test_resolve_docs_stays_under_docs_root(tmp_path):
    (tmp_path / "secret.md").write_text("no")
    root = tmp_path / "docs"
    root.mkdir()
    toolbox = Toolbox()
    toolbox.register_tool(ToolSpec(name="t", provider="p", docs="../secret.md"), fn=print)
    assert toolbox.resolve_docs("t", root) is None
