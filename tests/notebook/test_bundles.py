"""How tables and changes look (lackpy_kernel.notebook.bundles): text columns aligned left, number
columns right, in the text and in the HTML (JupyterLab right-aligns cells unless told)."""

from __future__ import annotations

from lackpy_kernel.kit.changes import Change, file_change
from lackpy_kernel.notebook.bundles import (
    CHANGES_MIME,
    change_bundle,
    output_bundle,
    table_bundle,
    turns_bundle,
)


def test_text_columns_align_left_and_number_columns_right():
    table = table_bundle(["tool", "ms", "args"], [["read_file", "1.5", "path='a'"],
                                                  ["find_files", "12.0", ""]])
    assert table["text/plain"].split("\n") == [
        "tool          ms  args    ",
        "read_file    1.5  path='a'",
        "find_files  12.0          ",
    ]
    html = table["text/html"]
    assert "<th style='text-align: left'>tool</th><th style='text-align: right'>ms</th>" in html
    assert "<td style='text-align: left'>read_file</td><td style='text-align: right'>1.5</td>" in html


def test_a_column_of_numbers_and_text_is_text():
    table = table_bundle(["turn", "status"], [[1, "ok"], ["2b", "failed"]])
    assert table["text/plain"].split("\n")[1] == "1     ok    "
    assert "<th style='text-align: left'>turn</th>" in table["text/html"]


def test_the_agent_turns_and_a_list_of_dicts_align_alike():
    turns = turns_bundle("agent", [["1", "read", "ok", "3.2"], ["10", "write", "failed", "45.0"]])
    assert turns["text/plain"].split("\n")[1:] == [
        "turn  step   status    ms",
        "   1  read   ok       3.2",
        "  10  write  failed  45.0",
    ]
    rows = output_bundle([{"name": "a", "size": 1, "ok": True}, {"name": "bb", "size": 20}])
    assert ("<td style='text-align: left'>a</td><td style='text-align: right'>1</td>"
            "<td style='text-align: left'>True</td>") in rows["text/html"]


def test_a_change_bundle_escapes_hostile_names_and_lines_in_its_html():
    change = Change((file_change("<img src=x onerror=alert(1)>.txt", b"safe\n",
                                 b"</pre><script>alert('x')</script>\n\x1b[31mred\n"),))
    bundle = change_bundle(change)
    markup = bundle["text/html"]
    assert "<script>" not in markup and "<img" not in markup
    assert "&lt;img src=x onerror=alert(1)&gt;.txt" in markup
    assert "+&lt;/pre&gt;&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in markup
    assert "\x1b" not in markup and "\x1b" not in bundle["text/plain"]
    assert "+\\x1b[31mred" in bundle["text/plain"]
    assert Change.from_frame(bundle[CHANGES_MIME]) == change  # the Lab dialog's data
