"""What a kernel-side tool imports from the workspace during a program is protected from
that same program (issue 25): the request's protected files were copied before the call,
so the kernel sends what the call protected with its answer, and the worker's commit
refuses it too. Before, such a helper was protected only from the next program on."""

from __future__ import annotations

import sys

import pytest

from lackpy_kernel.service import LackpyService

LAZY = '''
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def use_library() -> str:
    """What a helper in the workspace's lib/ says (imported when first called)."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
    import lazy_library_25b

    return lazy_library_25b.greet()
'''
CONFIG = '''
[tools.providers.lazy]
plugin = "python"
path = "tools/lazy.py"
where = "kernel"
grade = "read"
'''
HELPER = "def greet():\n    return 'hi'\n"


@pytest.fixture
def lazy(tmp_path, monkeypatch):
    for folder in ("tools", "lib", ".lackpy"):
        (tmp_path / folder).mkdir()
    (tmp_path / "tools" / "lazy.py").write_text(LAZY)
    (tmp_path / "lib" / "lazy_library_25b.py").write_text(HELPER)
    (tmp_path / ".lackpy" / "config.toml").write_text(CONFIG)
    monkeypatch.delitem(sys.modules, "lazy_library_25b", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the module adds to it
    return tmp_path


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "in-process"])
@pytest.mark.parametrize("path", ["lib/lazy_library_25b.py", "lib/other.py"])
async def test_a_helper_a_kernel_tool_imports_cannot_be_written_by_the_same_program(
        lazy, sandbox, path):
    payload = "import os\ndef greet():\n    return 'pwned'\n"
    with LackpyService(lazy) as service:
        result = await service.run_program(
            f"said = use_library()\nwrite_file({path!r}, PAYLOAD)\nsaid",
            kit="use_library,write_file", params={"PAYLOAD": payload}, sandbox=sandbox)
    assert result.error_type == "WorkspaceError", (result.error_type, result.error)
    assert "is the code of a tool source" in result.error
    assert (lazy / "lib" / "lazy_library_25b.py").read_text() == HELPER
    assert not (lazy / "lib" / "other.py").exists()
