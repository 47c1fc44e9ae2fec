"""Write the example notebooks, then run them so that every stored output is real.

    python notebooks/make_notebooks.py              # all seven
    python notebooks/make_notebooks.py ratchet      # one

Each notebook lives in its own folder, which is its workspace (the kernel's
working directory), and runs on the kernel named in its metadata: ``lackpy``
for all but the extension, ``python3``. Run it after changing a notebook's
cells or the kernel's output; ``pytest --nbval notebooks/`` then checks that a
fresh run still gives the same outputs (timings and paths masked by
``sanitize.cfg``).

While writing, this script also checks what nbval cannot: every cell that
shows an error carries the ``raises-exception`` tag (nbclient refuses errors in
untagged cells), and where a cell stands for the program a ``%delegate`` put
in the next cell, the text ``%delegate`` sent is exactly that cell's source.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
KERNELS = {
    "lackpy": {"name": "lackpy", "display_name": "lackpy", "language": "lackpy"},
    "python3": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
}


def md(text: str) -> dict:
    return {"kind": "markdown", "source": text.strip("\n")}


def code(source: str, *, error: bool = False, inserts: str | None = None) -> dict:
    """A code cell; ``error`` tags it raises-exception; ``inserts`` is the next cell it writes."""
    return {"kind": "code", "source": source.strip("\n"), "error": error, "inserts": inserts}


# -- the notebooks ---------------------------------------------------------------

TOUR = [
    md("""
# A tour of the lackpy kernel

Every cell of this notebook is a **lackpy program**: Python without imports,
functions, classes, `while` or `try`, which calls *tools* and works with plain
data. The kernel validates each cell before anything runs, then runs it in a
sandbox process with a time and memory limit. Lines that start with `%` are
magics; `%lsmagic` lists them.

The notebook's folder is the workspace: the tools see its files (`notes.txt`,
`shapes.py`) and nothing outside it. Its `.lackpy/config.toml` sets a short
time limit, `[sandbox] timeout = 2`, so that the limit at the end stops quickly.
"""),
    code("%lsmagic"),
    md("""
## Tools

A cell's last expression is its output. Under the output, the kernel lists
every tool call the program made (open the summary for the table), and the
files it read.
"""),
    code("""
notes = read_file('notes.txt')
notes.splitlines()
"""),
    md("`find_files` takes a glob; `find_definitions` and `find_callers` search the Python files."),
    code("find_files('*.py')"),
    code("find_definitions('area')"),
    code("""
callers = find_callers('area')
[f"{c['file']}:{c['line']} in {c['caller']}" for c in callers]
"""),
    md("""
## Kits

A kit is the set of tools a program may call. A fresh kernel uses the
read-only `debug` kit; `%kit` shows it, with its grade (the most the tools can
do: `w=1` means read only).
"""),
    code("%kit"),
    md("`%kit` also switches the kit: a kit name, or a list of tools."),
    code("%kit read_file,find_files"),
    md("""
Now `find_definitions` is not in the kit, so a program that calls it is not
valid lackpy, and nothing runs. The error names each problem, with its line and
column.
"""),
    code("find_definitions('square')", error=True),
    code("%kit debug"),
    md("""
## Traces

A program may call many tools. The trace under the output is short; `%trace`
shows the last program's calls in full, with what each returned.
"""),
    code("""
paths = find_files('*.py') + find_files('*.txt')
sizes = {}
for path in paths:
    sizes[path] = len(read_file(path).splitlines())
sizes
"""),
    code("%trace"),
    md("""
## Variables persist

Variables live on from cell to cell, like in Python. `%params` sets values
that every program can read; `%who` lists both.
"""),
    code("%params limit=1"),
    code("sorted(sizes)[:limit]"),
    md("""
## Errors

`%%validate` checks a program without running it. A program that is not lackpy
is refused before it runs, with every error at once:
"""),
    code("""
%%validate
first = read_file(find_files('*.txt')[0])
first.upper()
"""),
    code("""
import os
text = open('notes.txt').read()
""", error=True),
    md("A valid program can still fail while it runs; the error says where:"),
    code("read_file('missing.txt')", error=True),
    md("""
## Limits

A program runs in a sandbox with a wall-clock limit (here 2 s) and a memory
cap. This one would take hours; the sandbox stops it, and the kernel carries on.
"""),
    code("total = sum(range(1000000000000))", error=True),
    md("""
A cell that fails, for whatever reason, changes no variables: everything from
before is still here, and `total` was never set.
"""),
    code("%who"),
]

RATCHET = [
    md("""
# The ratchet: from rules to templates

`%delegate INTENT` asks the inference tiers for a program that does what the
intent says: saved **templates** first, then fixed **rules**, then (if
configured) a language model. This notebook has no model: rules answer the
first request, then `%%create` saves an improved program as a template, and the
same request is answered by the template from then on, with no model call
ever. That is the ratchet: each answer you keep makes the next one cheaper.

**Running it again.** `%%create` writes `.lackpy/templates/definitions.tmpl`
in this folder, and `%delegate` keeps a short history in
`.lackpy/intents.jsonl`; both are git-ignored. Under pytest,
`notebooks/conftest.py` deletes them before and after the notebook runs, so
rules always answer first. If you run the notebook by hand a second time,
delete `.lackpy/templates/` first, or the template answers the first request
too: the ratchet only turns one way.
"""),
    md("`%providers` lists the tiers. There are no templates yet:"),
    code("%providers"),
    md("""
Ask for a program. `--run` also runs it. The rules tier recognises
"find the definitions of NAME" and writes a one-line program; in Jupyter it
also appears in a new cell below the magic.
"""),
    code("%delegate --run find the definitions of greet",
         inserts="results = find_definitions('greet')\nresults"),
    md("""
The program it wrote is `results = find_definitions('greet')`, returning the
raw records. Say we want one line per definition, for any name. `%%create NAME`
validates the cell's program and saves it as a template; in the `--pattern`,
`{name}` captures that part of an intent and puts it into the program's string.
"""),
    code("""
%%create definitions --pattern "find the definitions of {name}"
found = find_definitions('{name}')
[f"{d['file']}:{d['line']} {d['kind']} {d['name']}" for d in found]
"""),
    md("The same request again: now the template answers it, and the output is the new format."),
    code("%delegate --run find the definitions of greet"),
    md("Any other name matches the same pattern:"),
    code("%delegate --run find the definitions of farewell"),
    md("""
The templates tier is available now, and the template file counts how often
its programs ran successfully (a program may read `.lackpy/`, never write it).
"""),
    code("%providers"),
    code("print(read_file('.lackpy/templates/definitions.tmpl'))"),
    md("""
## A program that writes waits for you

`%delegate --run` runs a program at once only when it does no more than
`[delegate] auto_run` in `.lackpy/config.toml` lets a program do unseen; by
default that is reading. Save a template that writes a file, and ask for it
with `--run`: the program goes into the next cell, not run, and the cell says
why. Read it, then run that cell, or add `--yes` to run such a program at once.
"""),
    code("""
%kit find_definitions,write_file
"""),
    code("""
%%create report --pattern "write the definitions of {name} to {path}"
found = find_definitions('{name}')
write_file('{path}', '\\n'.join([d['file'] for d in found]))
"""),
    code("%delegate --kit find_definitions,write_file --run write the definitions of greet to report.txt"),
]

EXTENSION = [
    md("""
# lackpy in a Python notebook

This notebook runs on the ordinary **Python** kernel. The IPython extension
adds two magics: `%%lackpy` runs one cell as a lackpy program (validated, then
run in the sandbox), and `%delegate` asks the inference tiers for a program.
The workspace is the folder that was current when the extension was loaded:
this notebook's folder, with `inventory.csv` in it.
"""),
    code("%load_ext lackpy_kernel"),
    md("""
## `%%lackpy`

`--kit` picks the tools the program may call (a kit name or a list of tools).
The program's last expression is the cell's result.
"""),
    code("""
%%lackpy --kit read_file
lines = read_file('inventory.csv').splitlines()
[line.split(',') for line in lines[1:]]
"""),
    md("`--out NAME` also stores the result in a Python variable, for the Python cells that follow."),
    code("""
%%lackpy --kit read_file --out stock
rows = [line.split(',') for line in read_file('inventory.csv').splitlines()[1:]]
{name: int(count) for name, count in rows}
"""),
    code("sorted(stock, key=stock.get, reverse=True)  # noqa: F821 (--out made stock)"),
    md("""
`--param name=value` hands values to the program; a value is a Python literal
where it reads as one (`5`, `[1, 2]`), otherwise a string (`pears`).
"""),
    code("""
%%lackpy --kit read_file --param item=pears --param extra=5
rows = dict([line.split(',') for line in read_file('inventory.csv').splitlines()[1:]])
int(rows[item]) + extra
"""),
    md("""
## Errors

A cell that is not lackpy raises `LackpyValidationError` before anything runs,
listing every problem; a failure while running raises `LackpyRuntimeError`.
"""),
    code("""
%%lackpy
import csv
rows = open('inventory.csv').readlines()
""", error=True),
    code("""
%%lackpy --kit read_file
read_file('missing.csv')
""", error=True),
    md("""
## `%delegate`

`%delegate INTENT` asks the tiers (templates, rules, then any configured model)
for a program, says which tier wrote it, and puts it into a new `%%lackpy` cell
below, to read, edit and run.
"""),
    code("%delegate find the csv files",
         inserts="%%lackpy\nfiles = find_files('**/*.csv')\nfiles"),
    md("This is the cell it inserted, run:"),
    code("""
%%lackpy
files = find_files('**/*.csv')
files
"""),
    md("With `--run` the program also runs at once, and its output is the result."),
    code("%delegate --run --kit read_file read the file inventory.csv",
         inserts="%%lackpy --kit read_file\ncontent = read_file('inventory.csv')\ncontent"),
]

REPLAY = [
    md("""
# A model tier, replayed

Templates and rules answer common requests; anything else goes to a language
model tier (Ollama or Anthropic). To keep a notebook reproducible without a
model, a server or an API key, the **replay** tier answers from recordings:
`.lackpy/replay.jsonl` holds one line per program a model wrote (the intent,
the kit's tools, the program and which provider wrote it). With
`[inference] record = true`, every program a model tier writes is appended
there, so a notebook run once against a real model replays anywhere.

This folder's `.lackpy/config.toml` puts replay after the built-in tiers, and
the recording was made by an `ollama-local` tier. A program may read `.lackpy/`:
"""),
    code("print(read_file('.lackpy/config.toml'))"),
    code("print(read_file('.lackpy/replay.jsonl'))"),
    md("`%providers` lists the tiers; replay is available because the file exists:"),
    code("%providers"),
    md("""
No rule understands this request, so the templates and rules tiers pass and
the replay tier answers it with the recorded program, which then runs here:
"""),
    code("%delegate --run how many lines does each note have"),
    md("""
A program may also use what the notebook already holds. `%delegate` tells a
model the session's variables (names, types, sizes and short previews, at most
2 KB in all, as `[delegate] context` in the config says: `previews`, `names` or
`none`), and the program may use them by name. This recording was written that
way, and the cell `%delegate` inserts says which variables it relies on:
"""),
    code("notes = {path: read_file(path) for path in find_files('notes/*.txt')}\nsorted(notes)"),
    code("%delegate --run which note is the longest", inserts=(
        "# uses the notebook's notes\nmax(notes, key=lambda path: len(notes[path]))")),
    md("""
A request that nothing recorded, and no rule or template knows, fails, says
what each tier answered, and what to do next:
"""),
    code("%delegate --run summarise the notes in one sentence", error=True),
]

PLANS = [
    md("""
# Plans: steps, a parallel band, an approval, a resume, a fan-out

A **plan** runs lackpy programs one after another, each taking what the one
before it gave. A `%%step NAME` cell declares a step: the cell is a lackpy
program that sees two parameters, `task` (by default what the step before
returned) and `context`; its last expression is what it gives the next step.
The cell is validated at once and shows the step, not a result; running the
cell again replaces the step.

This plan counts a day's notes: it reads the file, counts its lines and its
words at the same time (two `--parallel` steps form one band, whose results
count only if both succeed), waits for someone to approve, then reports.
"""),
    code("""
%%step fetch --writes text
read_file(task)
"""),
    code("""
%%step lines --parallel
len(task.splitlines())
"""),
    code("""
%%step words --parallel
len(task.split())
"""),
    md("""
`%plan gate NAME PROMPT` adds an approval: the first time a run reaches it, the
run stops with a checkpoint; resuming the run is the approval. The last step
reads both counts of the band at once (`from_parallel_all(lines)` gives
`{'lines': ..., 'words': ...}`) and the run's task (`from_start`) as its context.
"""),
    code("%plan gate approve do these counts look right?"),
    code("""
%%step report --task from_parallel_all(lines) --context from_start --writes report
{'file': context, 'lines': task['lines'], 'words': task['words']}
"""),
    md("`%plan` shows the plan as a table:"),
    code("%plan"),
    md("""
## Run, pause, resume

`%plan run TASK --key K` runs the plan on `TASK`, checkpointing under the key
`K` after every step in `.lackpy/plans.sqlite` (a program can read `.lackpy/`
but never write it, so a plan cannot change its own checkpoints). A table
follows the run step by step; when it stops, the final one stays. This run
stops at the approval:
"""),
    code("%plan run notes/monday.txt --key monday"),
    code("%plan status monday"),
    md("""
Resuming runs the rest, and nothing twice: the steps done before the pause
are not run again (the stop button pauses a run the same way, with a
checkpoint, and `%plan resume` picks it up at the step it stopped in).
"""),
    code("%plan resume monday"),
    md("""
`%plan save NAME` writes the plan to `.lackpy/plans/NAME.json`, so a shell or
cron job runs it too: `lackpy plan run daily-counts notes/monday.txt --key K`,
and `lackpy plan resume K` after an approval.
"""),
    code("%plan save daily-counts"),
    md("""
## Fan out

For a batch, drop the approval and run the plan over a list: `%plan run-many
VARIABLE` runs it once per item, here two at a time, and lists every result in
the order of the inputs. With `--key`, each run checkpoints under a key of its
own (`week:` and a run id).
"""),
    code("%plan drop approve"),
    code("""
days = sorted(find_files('notes/*.txt'))
days
"""),
    code("%plan run-many days --concurrency 2 --key week"),
]

AGENT = [
    md("""
# Agents: a model calling tools, turn by turn

`%agent INTENT` lets a model call the kit's tools until it can answer: each turn
the model sees what the tools gave, and asks for more calls or answers. Every
call runs as a one-line lackpy program (validated, confined to the workspace,
plain data only, in the sandbox under its limits), and the table under the
magic follows the run as it goes. At the end the run's successful calls are put
in the next cell as one straight-line program: `%%create` saves it as a template,
and the same intent is then answered with no model at all.

This notebook needs no model: its `.lackpy/config.toml` says
`[agent] provider = "replay"`, and `.lackpy/conversations.jsonl` holds one
recorded conversation per run (each turn's text and tool calls). A run on a real
model is recorded there when the config says `[inference] record = true`;
`record.py` in this folder recorded these from a scripted model. The tool calls
themselves run for real, on the notes in this folder.
"""),
    code("%agent how many lines does each note have?", inserts=(
        "step_1 = find_files(pattern='notes/*.txt')\n"
        "step_2 = read_file(path='notes/monday.txt')\n"
        "step_3 = read_file(path='notes/tuesday.txt')\n"
        "step_4 = read_file(path='notes/wednesday.txt')\n"
        "[step_1, step_2, step_3, step_4]")),
    md("""
The three `read_file` calls of turn 2 ran at the same time. This is the program
`%agent` put in the next cell: the same calls, with no model in between.
"""),
    code("""
step_1 = find_files(pattern='notes/*.txt')
step_2 = read_file(path='notes/monday.txt')
step_3 = read_file(path='notes/tuesday.txt')
step_4 = read_file(path='notes/wednesday.txt')
[step_1, step_2, step_3, step_4]
"""),
    md("""
Keep it: `%%create NAME` saves the program as a template for the intent that
produced it (give `--pattern` when you change the program first). `%delegate`
then answers that intent from the template, with no model call.
"""),
    code("""
%%create note-lines
step_1 = find_files(pattern='notes/*.txt')
step_2 = read_file(path='notes/monday.txt')
step_3 = read_file(path='notes/tuesday.txt')
step_4 = read_file(path='notes/wednesday.txt')
[step_1, step_2, step_3, step_4]
"""),
    code("%delegate how many lines does each note have?", inserts=(
        "step_1 = find_files(pattern='notes/*.txt')\n"
        "step_2 = read_file(path='notes/monday.txt')\n"
        "step_3 = read_file(path='notes/tuesday.txt')\n"
        "step_4 = read_file(path='notes/wednesday.txt')\n"
        "[step_1, step_2, step_3, step_4]")),
    md("""
## Safety: limits, and writes need approval

With `lackpy` in the kit, the model may also run a whole program. The first one it
writes never ends: the sandbox stops it at its time limit (2 s here), the model is
told, and the run goes on.
"""),
    code("%agent --kit debug,lackpy count the words in all the notes", inserts=(
        "%kit debug\n"  # the agent's kit less lackpy, so the cell runs as the agent ran it
        "words = [len(read_file(path).split()) for path in find_files('notes/*.txt')]\n"
        "step_1 = sum(words)\n"
        "step_1")),
    md("""
A tool that writes needs approval, as with `%delegate --run`: by default the agent
may only read, so `edit_file` is refused and the file stays as it was.
`%agent --allow-writes` would let it edit.
"""),
    code("%agent --kit read_file,edit_file fix the typo reveiw in notes/monday.txt",
         inserts="%kit read_file,edit_file\nstep_1 = read_file(path='notes/monday.txt')\nstep_1"),
    code("read_file('notes/monday.txt').splitlines()[1]"),
    md("""
## Replanning

`%replan INTENT` has a planner model decide each round's tool calls after seeing
the rounds before (tasks of one round may run in parallel); with `--key` each
round is checkpointed in `.lackpy/plans.sqlite`, and `--resume` goes on from
there after an interrupt or a crash.
"""),
    code("%replan --key words which note has the most words?"),
    code("%plan status words"),
]

SOURCES = [
    md("""
# Your own tools: a Python module and an MCP server

Beside the built-in file tools, a kit can draw on **tool sources** declared in
`.lackpy/config.toml`: here `words.py`, a Python module whose documented
functions are tools, and `glossary.py`, a small MCP server written with the
official SDK, which lackpy starts over stdio when a kit first needs it.

Every program still runs in the sandbox, under its time and memory limits. A
Python tool runs there with the program; an MCP tool is called through the
sandbox's worker, in the kernel's process, and its answer comes back as plain
data. This folder's config gives each cell 3 seconds:
"""),
    code("print(read_file('.lackpy/config.toml'))"),
    md("""
`%kit` names tools from any source. Each is described from its signature and
docstring (or the server's schema), as prompts and Shift-Tab show them:
"""),
    code("%kit read_file,write_file,count_words,top_words,define,add_term,define_slowly"),
    md("One cell calls tools from both sources; the trace says where each came from."),
    code("""
text = read_file('notes.txt')
{'words': count_words(text), 'top': top_words(text, 2), 'kit': define('kit')}
"""),
    md("The server keeps its state from call to call, for the kernel's life:"),
    code("""
add_term('ratchet', 'a verified program saved as a template')
define('ratchet')
"""),
    md("""
## Limits and walls hold for every tool

A tool's time counts against the cell's: a slow answer stops the cell at its
limit. The cell's variables stay as they were, and so do the server and
what it holds:
"""),
    code("meaning = define_slowly('kit', 30)", error=True),
    code("[text.splitlines()[0], define('ratchet')]"),
    md("""
Programs may write files in the workspace, but not the code of a tool source:
it runs outside the sandbox, so a program that rewrote it would escape.
"""),
    code("write_file('words.py', 'import os')", error=True),
    md("""
## From `%delegate`

The replay tier answers from `.lackpy/replay.jsonl`, a program a model wrote
with this kit; `--run` runs it here, under the same limits:
"""),
    code("%delegate --run count the words of notes.txt and define the most frequent one",
         inserts="text = read_file('notes.txt')\ntop = top_words(text, 1)[0]\n"
                 "{'words': count_words(text), 'top': top, 'meaning': define(top)}"),
]

NOTEBOOKS = {
    "tour": ("lackpy", TOUR),
    "ratchet": ("lackpy", RATCHET),
    "extension": ("python3", EXTENSION),
    "replay": ("lackpy", REPLAY),
    "plans": ("lackpy", PLANS),
    "agent": ("lackpy", AGENT),
    "sources": ("lackpy", SOURCES),
}


def notebook_path(name: str) -> Path:
    """Where the project's notebook ``name`` lives: ``notebooks/NAME/NAME.ipynb``."""
    return HERE / name / f"{name}.ipynb"


def is_project_notebook(path: Path) -> bool:
    """Whether ``path`` is one of the notebooks above (not one a user saved beside them)."""
    return Path(path).resolve() in {notebook_path(name) for name in NOTEBOOKS}


# -- writing and running -----------------------------------------------------------

def build(name: str, cells: list[dict], kernel: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELS[kernel])
    for number, spec in enumerate(cells):
        if spec["kind"] == "markdown":
            cell = nbformat.v4.new_markdown_cell(spec["source"])
        else:
            cell = nbformat.v4.new_code_cell(spec["source"])
            if spec["error"]:
                cell.metadata["tags"] = ["raises-exception"]
        cell.id = f"{name}-{number}"  # stable ids: regenerating gives small diffs
        nb.cells.append(cell)
    return nb


def clean(folder: Path) -> None:
    """Remove what a notebook writes into its folder's ``.lackpy/`` (all git-ignored): the
    intents ``%delegate`` keeps, the kernel's cell history, the usage record, the plans
    notebook's checkpoints (``plans.sqlite``) and saved plans, the undo records of the files
    its programs wrote, the ratchet's templates (a template left from an earlier run would answer the
    ratchet's first request, which must come from the rules tier), and Kibitzer's state (its
    suggestions depend on the calls it has seen)."""
    (folder / ".lackpy" / "intents.jsonl").unlink(missing_ok=True)
    for record in [*(folder / ".lackpy").glob("history.sqlite*"),  # with its write-ahead log
                   *(folder / ".lackpy").glob("usage.sqlite*")]:
        record.unlink()
    if folder.name in ("ratchet", "agent"):
        shutil.rmtree(folder / ".lackpy" / "templates", ignore_errors=True)
    for store in (folder / ".lackpy").glob("plans.sqlite*"):
        store.unlink()
    shutil.rmtree(folder / ".lackpy" / "plans", ignore_errors=True)
    shutil.rmtree(folder / ".lackpy" / "undo", ignore_errors=True)
    shutil.rmtree(folder / ".kibitzer", ignore_errors=True)  # Kibitzer's state (kibitzer extra)
    try:
        (folder / ".lackpy").rmdir()  # only when empty: the kernel made it, nothing else is in it
    except OSError:
        pass


def run(name: str) -> None:
    """Run notebook ``name``, check it and write it."""
    nb = execute(name)
    nbformat.validate(nb)
    nbformat.write(nb, notebook_path(name))
    print(f"wrote {notebook_path(name).relative_to(HERE.parent)}")


def execute(name: str) -> nbformat.NotebookNode:
    """Notebook ``name`` run from a clean folder, after ``check``; raises SystemExit saying
    which cell differs from what it should show."""
    kernel, cells = NOTEBOOKS[name]
    folder = HERE / name
    nb = build(name, cells, kernel)
    replies: dict[int, dict] = {}

    def keep_reply(cell, cell_index, execute_reply):
        replies[cell_index] = execute_reply["content"]

    clean(folder)
    try:
        client = NotebookClient(nb, kernel_name=kernel, timeout=60, record_timing=False,
                                resources={"metadata": {"path": str(folder)}},
                                on_cell_executed=keep_reply)
        client.execute()
    finally:
        clean(folder)
    check(name, nb, cells, replies)
    return nb


def check(name: str, nb: nbformat.NotebookNode, cells: list[dict], replies: dict) -> None:
    for index, (cell, spec) in enumerate(zip(nb.cells, cells, strict=True)):
        if spec["kind"] != "code":
            continue
        failed = any(out.output_type == "error" for out in cell.outputs)
        if spec["error"] and not failed:
            raise SystemExit(f"{name}, cell {index}: expected an error, got none")
        if spec["inserts"] is not None:
            texts = [p.get("text") for p in replies[index].get("payload", [])
                     if p.get("source") == "set_next_input"]
            if texts != [spec["inserts"]]:
                raise SystemExit(f"{name}, cell {index}: %delegate inserted {texts!r}, "
                                 f"not {spec['inserts']!r}")


def main(names: list[str]) -> None:
    for name in names or list(NOTEBOOKS):
        run(name)


if __name__ == "__main__":
    main(sys.argv[1:])
