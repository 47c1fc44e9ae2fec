"""A string holding ``__`` is data unless a format string could turn it into attribute
access (issue 42 item 5): paths and names such as ``pkg/__init__.py`` reach the tools, while
a ``{}`` field naming a dunder is refused, and no way of using a dunder string as data
reaches an attribute at run time."""

from __future__ import annotations

import pytest

from lackpy_kernel.service import LackpyService
from tests.support.kernel import make_workspace

pytestmark = pytest.mark.asyncio


@pytest.fixture
def service(tmp_path):
    make_workspace(tmp_path, "[sandbox]\ntimeout = 30\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("class Thing:\n    def __init__(self):\n"
                                                  "        pass\n")
    with LackpyService(tmp_path) as svc:
        yield svc


async def test_dunder_paths_and_names_reach_the_tools(service):
    kit = ["read_file", "find_files", "find_definitions"]
    read = await service.run_program("read_file('pkg/__init__.py')", kit)
    found = await service.run_program("find_files('**/__init__.py')", kit)
    defined = await service.run_program("find_definitions('__init__')", kit)
    assert read.success and "class Thing" in read.output
    assert found.success and found.output == ["pkg/__init__.py"]
    assert defined.success and defined.output, defined.error


@pytest.mark.parametrize("program", [
    "'{0.__class__}'", "'{__globals__}'", "'{0.__init__.__globals__[x]}'",
    "'{0[__builtins__]}'",
])
async def test_a_format_field_naming_a_dunder_is_refused(service, program):
    result = await service.run_program(program, ["read_file"])
    assert result.error_type == "LackpyValidationError" and result.trace.entries == []


@pytest.mark.parametrize(("program", "data"), [
    ("x = '{0.__class__}'\nx.format(1)", None),  # format is a gadget, whatever the string
    ("x = '{0.' + '_' + '_class__}'\nx.format_map({})", None),
    ("d = {'__class__': 1}\nd.__class__", None),
    ("x = '{' + '0.__class__}'\nx", "{0.__class__}"),  # built at run time: text only
    ("sort_by([{'__class__': 2}, {'__class__': 1}], '__class__')",
     [{"__class__": 1}, {"__class__": 2}]),
])
async def test_no_dunder_string_reaches_an_attribute(service, program, data):
    result = await service.run_program(program, ["read_file"])
    if data is None:
        assert result.error_type == "LackpyValidationError"
    else:  # as data only: a dict key, a sort key, a string
        assert result.success and result.output == data
