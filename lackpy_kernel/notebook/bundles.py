"""How results, traces, tables and errors look: pure functions every surface shares.

The kernel sends these bundles to the front end; the IPython extension and the CLI
show the same text. Nothing here sends or prints anything.
"""

from __future__ import annotations

import html
import pprint
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from lackpy_kernel.errors import LackpyError, LimitError
from lackpy_kernel.infer import (
    CorrectionStep,
    GenerationEvent,
    GenerationResult,
    ProgramStreaming,
    ProviderFailed,
    ProviderTried,
    ProviderUnavailable,
)
from lackpy_kernel.kit.changes import Change, FileChange, printable
from lackpy_kernel.lang import Issue
from lackpy_kernel.run import ExecutionResult, Trace
from lackpy_kernel.run.plain import display_problem, jsonable
from lackpy_kernel.run.runner import VALIDATION_ERROR
from lackpy_kernel.service import Delegation

TABLE_ROWS = 200
CELL_TEXT = 80
NOTE_TEXT = 600  # characters of a run's error shown under its card and table
EXCERPT_CHARS = 120  # the most of a source line shown under one validation issue
JSON_TREE_LINES = 30  # nested data whose text is longer than this may fold as a JSON tree
TRACE_MIME = "application/vnd.lackpy.trace+json"  # the Lab extension's trace renderer reads it
CHANGES_MIME = "application/vnd.lackpy.changes+json"  # a Change as data, for the Lab dialog
PROGRESS_MIME = "application/vnd.lackpy.progress+json"  # a live run as data, for the Lab card
_LINE_STYLES = {"+": "background: rgba(46, 160, 67, 0.18)", "-": "background: rgba(248, 81, 73, 0.18)",
                "@": "color: #6a737d"}

__all__ = [
    "CHANGES_MIME",
    "ErrorReport",
    "change_bundle",
    "delegation_status",
    "GenerationProgress",
    "PROGRESS_MIME",
    "ProgressCard",
    "ProgressItem",
    "kit_label",
    "generation_progress",
    "generation_summary",
    "uses_comment",
    "held_message",
    "output_bundle",
    "output_text",
    "plan_bundle",
    "progress_bundle",
    "remote_card",
    "remote_run_bundle",
    "runs_bundle",
    "program_error",
    "too_large_to_show",
    "table_bundle",
    "tasks_bundle",
    "TRACE_MIME",
    "trace_bundle",
    "turns_bundle",
    "validation_error",
]


@dataclass
class ErrorReport:
    """An error as Jupyter shows one: its name, its message and the traceback's lines."""

    ename: str
    evalue: str
    traceback: list[str]


def program_error(result: ExecutionResult, program: str) -> ErrorReport:
    """A failed program's error: validation errors with carets, or the runtime error."""
    if result.error_type == VALIDATION_ERROR:
        return validation_error(result.issues, program)
    ename = _error_name(result)
    message = result.error or "the program failed"
    evalue = message.removeprefix(f"{result.error_type}: ").removeprefix(f"{ename}: ")
    return ErrorReport(ename, evalue, [f"{ename}: {evalue}"])


def _error_name(result: ExecutionResult) -> str:
    """The name a failed program's error shows: lackpy's class for a limit it ran past
    (``ProgramTimeoutError``, ``ProgramMemoryError``, ``ResultTooLargeError``: the class
    ``%%lackpy`` raises), else the program's own error type."""
    try:
        result.raise_for_error()
    except LimitError as exc:
        return type(exc).__name__
    except LackpyError:
        pass
    return result.error_type or "Error"


def validation_error(issues: list[Issue], program: str) -> ErrorReport:
    """One error for all of a program's validation issues, each with its line and a caret."""
    lines = program.split("\n")
    count = len(issues)
    traceback = [f"{VALIDATION_ERROR}: the cell is not valid lackpy ({count} "
                 f"error{'s' if count != 1 else ''}); nothing ran"]
    for issue in issues:
        traceback.append(str(issue))
        if 0 < issue.line <= len(lines):
            excerpt, caret = _excerpt(lines[issue.line - 1], issue.col)
            traceback.append(f"    {excerpt}")
            if issue.col:
                traceback.append("    " + " " * caret + "^")
    evalue = "; ".join(str(issue) for issue in issues[:3])
    if count > 3:
        evalue += f"; and {count - 3} more"
    return ErrorReport(VALIDATION_ERROR, evalue, traceback)


def _excerpt(line: str, col: int) -> tuple[str, int]:
    """The part of a source line shown under an issue and where its caret goes in it: the
    whole line when short, else a window around the column, so a long line with many errors
    is not repeated in full for each."""
    caret = max(col - 1, 0)
    if len(line) <= EXCERPT_CHARS:
        return line, caret
    start = max(0, min(caret - EXCERPT_CHARS // 2, len(line) - EXCERPT_CHARS))
    end = start + EXCERPT_CHARS
    prefix = "..." if start else ""
    suffix = "..." if end < len(line) else ""
    return f"{prefix}{line[start:end]}{suffix}", caret - start + len(prefix)


def output_bundle(output: Any) -> dict[str, Any]:
    """The result as a person reads it best: a list of dicts as an HTML table, large nested
    data as the JSON tree (``application/json``), anything else as its text; for an output
    too large to render, a short text saying so (never the expanded value).

    JupyterLab shows the richest type a bundle holds and ranks the JSON tree above HTML and
    text, so the tree is sent only where folding helps; ``text/plain`` is always there.
    """
    problem = display_problem(output)
    if problem is not None:
        return {"text/plain": too_large_to_show(problem)}
    text = _plain_text(output)
    bundle: dict[str, Any] = {"text/plain": text}
    if _is_rows(output):
        columns = list(dict.fromkeys(key for row in output for key in row))
        rows = [[row.get(column, "") for column in columns] for row in output[:TABLE_ROWS]]
        bundle["text/html"] = table_bundle([str(c) for c in columns], rows,
                                           more=len(output) - TABLE_ROWS)["text/html"]
    elif _folds(output, text):
        bundle["application/json"] = jsonable(output)
    return bundle


def output_text(output: Any) -> str:
    """An output as text: a string as it is, anything else pretty-printed, and an output too
    large to render as a short text saying so."""
    problem = display_problem(output)
    return too_large_to_show(problem) if problem is not None else _plain_text(output)


def _plain_text(output: Any) -> str:
    return output if isinstance(output, str) else pprint.pformat(output, width=100, sort_dicts=False)


def too_large_to_show(problem: str) -> str:
    """The text shown in place of an output that cannot be rendered, and what to do."""
    return (f"[the output is {problem}; assign it to a variable and look at a part of it: "
            "a slice, len(...), or its first items]")


def _folds(output: Any, text: str) -> bool:
    """Whether the JSON tree reads better than the text: long text, and items nested deep
    enough that the text spreads them over several lines each (where each item fits on one
    line, the text shows more than a tree whose rows read ``[] 2 items``)."""
    if not isinstance(output, list | dict):
        return False
    lines = text.count("\n") + 1
    values = output.values() if isinstance(output, dict) else output
    return (lines >= JSON_TREE_LINES and lines > len(output)
            and any(isinstance(value, list | dict) for value in values))


def _is_rows(output: Any) -> bool:
    return (isinstance(output, list) and bool(output)
            and all(isinstance(row, dict) for row in output))


def table_bundle(columns: list[str], rows: list[list[Any]], more: int = 0) -> dict[str, str]:
    """A table as text/plain and text/html: text columns aligned left, number columns
    (every filled cell a number) right, in both."""
    cells = [[_cell_text(value) for value in row] for row in rows]
    widths = [max([len(column), *(len(row[i]) for row in cells)]) for i, column in
              enumerate(columns)]
    numeric = [_is_number_column([row[i] for row in rows]) for i in range(len(columns))]
    plain = [_plain_row(columns, widths, numeric)]
    plain += [_plain_row(row, widths, numeric) for row in cells]
    aligns = [f" style='text-align: {'right' if number else 'left'}'" for number in numeric]
    head = "".join(f"<th{align}>{html.escape(column)}</th>"
                   for column, align in zip(columns, aligns, strict=True))
    body = "".join("<tr>" + "".join(f"<td{align}>{html.escape(v)}</td>"
                                    for v, align in zip(row, aligns, strict=True)) + "</tr>"
                   for row in cells)
    if more > 0:
        plain.append(f"... and {more} more rows")
        body += (f"<tr><td colspan='{len(columns)}' style='text-align: left'>"
                 f"... and {more} more rows</td></tr>")
    return {"text/plain": "\n".join(plain),
            "text/html": f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"}


def _plain_row(cells: list[str], widths: list[int], numeric: list[bool]) -> str:
    padded = (cell.rjust(width) if number else cell.ljust(width)
              for cell, width, number in zip(cells, widths, numeric, strict=True))
    return "  ".join(padded)


_NUMBER = re.compile(r"-?\d+(\.\d+)?( ms)?")  # a count, a measure, a duration


def _is_number_column(values: list[Any]) -> bool:
    """Whether a column holds numbers: every cell not empty is one, or its text (a duration
    ``12.5 ms`` too)."""
    filled = [value for value in values if value not in ("", None)]
    return bool(filled) and all(_is_number(value) for value in filled)


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and _NUMBER.fullmatch(value) is not None


def _note_text(value: Any) -> str:
    """``value`` as a note's text: control and bidi characters escaped, cut to NOTE_TEXT."""
    text = printable(str(value))
    return text if len(text) <= NOTE_TEXT else text[:NOTE_TEXT - 3] + "..."


def _cell_text(value: Any) -> str:
    text = printable(value if isinstance(value, str) and "\n" not in value else repr(value))
    return text if len(text) <= CELL_TEXT else text[:CELL_TEXT - 3] + "..."


def trace_bundle(trace: Trace, *, compact: bool) -> dict[str, Any]:
    """The tool calls: one line each (tool, args, ms, ok, and the tool's source when one is
    not built in); with results in full unless compact. Beside text and HTML, the same table
    as ``TRACE_MIME`` JSON for the Lab extension's renderer (front ends without it skip it)."""
    total = sum(entry.duration_ms for entry in trace.entries)
    count = len(trace.entries)
    title = f"trace: {count} tool call{'s' if count != 1 else ''}, {total:.1f} ms"
    sourced = any(entry.source not in ("", "builtin") for entry in trace.entries)
    columns = ["#", "tool", "args", "ms", "ok"] + (["source"] if sourced else []) + \
        ([] if compact else ["result / error"])
    rows = []
    for entry in trace.entries:
        args = printable(", ".join(f"{k}={v!r}" for k, v in entry.args.items()))
        row = [entry.step, entry.tool, args, f"{entry.duration_ms:.1f}",
               "ok" if entry.success else "failed"] + ([entry.source] if sourced else [])
        if not compact:
            row.append(entry.result if entry.success else entry.error)
        rows.append(row)
    table = table_bundle(columns, rows)
    files = [printable(f"read: {', '.join(trace.files_read)}")] if trace.files_read else []
    files += ([printable(f"modified: {', '.join(trace.files_modified)}")]
              if trace.files_modified else [])
    plain = "\n".join([title, table["text/plain"], *files])
    extra = "".join(f"<div>{html.escape(line)}</div>" for line in files)
    opened = "" if compact else " open"
    markup = f"<details{opened}><summary>{html.escape(title)}</summary>{table['text/html']}"
    data = {"title": title, "columns": columns, "rows": [[_cell_text(v) for v in row] for row in rows],
            "numeric": [_is_number_column([row[i] for row in rows]) for i in range(len(columns))],
            "files_read": list(trace.files_read), "files_modified": list(trace.files_modified),
            "open": not compact}
    return {"text/plain": plain, "text/html": markup + extra + "</details>", TRACE_MIME: data}


def change_bundle(change: Change) -> dict[str, Any]:
    """A program's file changes as a person approves them: text/plain (``Change.to_text``),
    text/html (a table of the files, then each file's diff, everything escaped) and
    ``CHANGES_MIME`` (``Change.to_shown_frame()``, for a front end that draws its own: what
    is shown, and how much more the kernel holds, which it displays on ``all``)."""
    rows = "".join(f"<tr><td style='text-align: left'>{file.status}</td>"
                   f"<td style='text-align: left'><code>{html.escape(file.path)}</code></td>"
                   f"<td style='text-align: left'>{html.escape(file.summary)}</td></tr>"
                   for file in change.files)
    diffs = "".join(_file_diff_html(file) for file in change.files)
    warnings = change.warnings()
    warned = f"<div><b>{html.escape(warnings)}</b></div>" if warnings else ""
    markup = (f"<div class='lackpy-changes'><div><b>{html.escape(change.summary())}</b></div>"
              f"{warned}<table><tbody>{rows}</tbody></table>{diffs}</div>")
    return {"text/plain": change.to_text(), "text/html": markup,
            CHANGES_MIME: change.to_shown_frame()}


def _file_diff_html(file: FileChange) -> str:
    if not file.lines and not file.omitted:
        return ""
    lines = "".join(f"<div style='{_LINE_STYLES.get(line[:1], '')}'>{html.escape(line) or ' '}"
                    "</div>" for line in file.lines)
    if file.omitted:
        lines += f"<div>... {file.omitted} more line{'s' if file.omitted != 1 else ''} not shown</div>"
    title = html.escape(f"{file.path} ({file.status}, {file.counts})")
    return (f"<details open><summary><code>{title}</code></summary>"
            f"<pre style='margin: 0'>{lines}</pre></details>")


def uses_comment(names: tuple[str, ...] | list[str]) -> str:
    """The comment a delegated program's cell starts with: the variables it relies on."""
    return f"# uses the notebook's {', '.join(names)}"


def generation_summary(generated: GenerationResult) -> str:
    """``written by TIER in N ms`` (and how it was corrected, if it was)."""
    text = f"written by {generated.provider_name} in {generated.generation_time_ms:.1f} ms"
    if generated.correction_strategy:
        text += f" (corrected by {generated.correction_strategy})"
    return text


# -- plans ---------------------------------------------------------------------------

PLAN_COLUMNS = ["#", "step", "target", "task", "context", "writes", "band"]


def plan_bundle(rows: list[list[str]], title: str = "") -> dict[str, str]:
    """A plan's steps as a table (rows as ``PlanDraft.rows`` gives them), under ``title``."""
    if not rows:
        return {"text/plain": "the plan has no steps yet: declare one with a %%step NAME cell"}
    return _titled(title, table_bundle(PLAN_COLUMNS, rows))


def progress_bundle(title: str, rows: list[list[str]], state: str = "running") -> dict[str, Any]:
    """A run's steps so far (rows as ``StepLog.rows`` gives them): step, status, runs, ms;
    beside text and HTML, the same as a ``PROGRESS_MIME`` card in ``state``."""
    items = [ProgressItem(step, status, f"ran {runs} times" if runs not in ("0", "1") else "", ms)
             for step, status, runs, ms in rows]
    return _carded(table_bundle(["step", "status", "runs", "ms"], rows),
                   ProgressCard("plan", title, state, items))


def tasks_bundle(title: str, rows: list[list[Any]], state: str = "running") -> dict[str, Any]:
    """A ``%plan run-many`` so far (rows as ``TaskLog.rows`` gives them): task, status, output
    or error, ms; beside text and HTML, the same as a ``PROGRESS_MIME`` card ("many")."""
    items = [ProgressItem(_cell_text(task), status, _cell_text(outcome), ms)
             for task, status, outcome, ms in rows]
    return _carded(table_bundle(["task", "status", "output / error", "ms"], rows),
                   ProgressCard("many", title, state, items))


def _carded(table: dict[str, str], card: ProgressCard) -> dict[str, Any]:
    return {**_titled(card.title, table), PROGRESS_MIME: card.to_dict()}


def turns_bundle(title: str, rows: list[list[str]], label: str = "turn",
                 state: str = "running") -> dict[str, Any]:
    """An agent run so far (rows as ``TurnLog.rows`` gives them): turn (or round), step,
    status, ms; beside the text, the same as a ``PROGRESS_MIME`` card in ``state``."""
    items = [ProgressItem(f"{label} {turn}", status, step, ms) for turn, step, status, ms in rows]
    card = ProgressCard("agent" if label == "turn" else "replan", title, state, items)
    if not rows:
        return {"text/plain": title, PROGRESS_MIME: card.to_dict()}
    return _carded(table_bundle([label, "step", "status", "ms"], rows), card)


def runs_bundle(runs: list[Any]) -> dict[str, str]:
    """Checkpointed runs (``RunStatus``): key, plan, status, next step, steps done, error."""
    if not runs:
        return {"text/plain": "no plan runs yet"}
    rows = [[run.key, run.plan or "", run.status, run.next_step or "",
             str(len(run.completed_steps)),
             f"{run.error['type']}: {run.error['message']}" if run.error else ""] for run in runs]
    return table_bundle(["key", "plan", "status", "next step", "steps done", "error"], rows)


def remote_run_bundle(title: str, run: Any, *, trace: bool = False) -> dict[str, Any]:
    """A plan run on Temporal (a ``TemporalRun``): its steps with their attempts and workers,
    with ``trace`` its tool calls, then where it stands (its output once done). Without
    ``trace`` (a display following the run), also the ``PROGRESS_MIME`` card of it."""
    tables = [table_bundle(list(run.COLUMNS), run.rows())]
    calls = run.trace_rows() if trace else []
    if calls:
        tables.append(table_bundle(list(run.TRACE_COLUMNS), calls))
    outcome = _remote_outcome(run)
    plain = "\n".join([title, *(table["text/plain"] for table in tables), outcome])
    markup = "".join(table["text/html"] for table in tables)
    bundle = {"text/plain": plain, "text/html": f"<div>{html.escape(title)}</div>{markup}"
                                                f"<pre>{html.escape(outcome)}</pre>"}
    return bundle if trace else {**bundle, PROGRESS_MIME: remote_card(title, run).to_dict()}


def remote_card(title: str, run: Any) -> ProgressCard:
    """The card of a plan run on Temporal: its steps (status, attempt and worker, ms), and
    where it stands as its note, or once done its output."""
    items = [ProgressItem(step, _cell_text(status), _remote_detail(attempts, worker), ms)
             for step, status, attempts, worker, ms in run.rows()]
    if run.status == "done":
        output = _remote_outcome(run).removeprefix("done; output:\n")
        return ProgressCard("plan", title, "done", items, program=output, program_label="output")
    return ProgressCard("plan", title, run.status, items, note=_remote_outcome(run))


def _remote_detail(attempts: str, worker: str) -> str:
    where = f"on {_cell_text(worker)}" if worker else ""
    again = f"attempt {attempts}" if attempts not in ("", "1") else ""
    return ", ".join(part for part in (where, again) if part)


def _remote_outcome(run: Any) -> str:
    error = run.error
    if run.status == "paused":
        return f"{_note_text(error['message'])}; %plan resume {run.key} continues"
    if run.status == "failed":
        return f"{_note_text(error['type'])}: {_note_text(error['message'])}"
    if run.status == "done":
        payload = run.envelope().payload
        text = payload if isinstance(payload, str) else pprint.pformat(payload, width=100)
        return f"done; output:\n{text}"
    return f"{run.status}; the notebook is free meanwhile: %plan status {run.key} shows it"


def _titled(title: str, table: dict[str, str]) -> dict[str, str]:
    if not title:
        return table
    return {"text/plain": f"{title}\n{table['text/plain']}",
            "text/html": f"<div>{html.escape(title)}</div>{table['text/html']}"}


def delegation_status(delegation: Delegation, where: str = "the next cell") -> str:
    """The end of ``%delegate``'s status line: who wrote the program, that it is in
    ``where``, and whether it ran."""
    text = f"{generation_summary(delegation.generated)}; it is in {where}"
    if delegation.ran:
        return f"{text}, and it ran here: its output is below"
    return f"{text}, not run" if delegation.held else text


def held_message(delegation: Delegation, where: str = "the next cell") -> str:
    """Why a program that was to run was only inserted, and how to run it."""
    reason = delegation.held.reason if delegation.held else "it was not run"
    return (f"not run: {reason}. Read the program in {where} and run it yourself, or add "
            "--yes to the %delegate line to run such a program at once.")


PROGRESS_REASON = 160  # characters of a provider's failure shown while others are tried


@dataclass(frozen=True)
class ProgressItem:
    """One line of a progress card: a tier, a step or a turn, its status, what it did, its
    time (``12.5 ms``, or empty)."""

    name: str
    status: str
    detail: str = ""
    ms: str = ""


@dataclass(frozen=True)
class ProgressCard:
    """What the Lab extension's progress card shows (``PROGRESS_MIME``): a ``%delegate``, a
    plan's run, a ``%plan run-many``, an agent's run or a re-planner's (``kind``: delegate,
    plan, many, agent, replan), its ``title``, ``state`` (running, done, failed, paused,
    interrupted) and ``items`` in order; for ``%delegate`` the tier that answered
    (``badge``, its line with the time it took), the program (streaming, or the one
    written) under ``program_label``, and a ``note``: its grade (a run on Temporal: its
    output under ``program_label``, or where it stands as its ``note``). Front ends
    without the extension show the bundle's text instead."""

    kind: str
    title: str
    state: str
    items: list[ProgressItem]
    badge: str = ""
    program: str = ""
    program_label: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The card as JSON's object."""
        return asdict(self)


@dataclass
class GenerationProgress:
    """What a live ``%delegate`` display shows: its title, then the generation so far. Its
    text ends showing the title alone, so a notebook replayed later shows what it showed
    first; its card (``PROGRESS_MIME``) ends showing the tiers tried and the one that
    answered."""

    title: str
    events: list[GenerationEvent] = field(default_factory=list)

    def add(self, event: GenerationEvent) -> dict[str, Any]:
        """The display's bundle once ``event`` has happened."""
        self.events.append(event)
        return {"text/plain": f"{self.title}\n{generation_progress(self.events)}",
                PROGRESS_MIME: self.card("running").to_dict()}

    def last_bundle(self, state: str, delegation: Delegation | None = None) -> dict[str, Any]:
        """The display's last bundle: the title alone as text (as it began), and the card in
        ``state`` (with ``delegation``: its program, the tier that wrote it, its grade)."""
        return {"text/plain": self.title, PROGRESS_MIME: self.card(state, delegation).to_dict()}

    def card(self, state: str, delegation: Delegation | None = None) -> ProgressCard:
        """The card of the generation so far, in ``state``: a line per tier (its latest
        status) and per correction step."""
        at: dict[str, int] = {}  # each tier's line
        items: list[ProgressItem] = []
        program = label = ""
        for event in self.events:
            if isinstance(event, ProgramStreaming):
                program, label = event.text, f"{event.provider} is writing ({event.step})"
                continue
            program = label = ""
            item, tier = _tier_item(event), not isinstance(event, CorrectionStep)
            if tier and event.provider in at:
                items[at[event.provider]] = item
                continue
            if tier:
                at[event.provider] = len(items)
            items.append(item)
        if delegation is None:  # a program streamed by a stopped model is not shown as written
            running = state == "running"
            return ProgressCard("delegate", self.title, state, items,
                                program=program if running else "",
                                program_label=label if running else "")
        # Who wrote it in how long is %delegate's status line below the card: the card says
        # it as the answering tier's line and time, not again as text.
        generated, grade = delegation.generated, delegation.grade
        if generated.provider_name in at:
            line = at[generated.provider_name]
            items[line] = ProgressItem(items[line].name, "answered", generated.kind,
                                       f"{generated.generation_time_ms:.1f} ms")
        corrected = f"; corrected by {generated.correction_strategy}" \
            if generated.correction_strategy else ""
        return ProgressCard("delegate", self.title, state, items, badge=generated.provider_name,
                            program=delegation.program, program_label="the program (valid lackpy)",
                            note=f"grade w={grade.w} d={grade.d}{corrected}")


def _tier_item(event: GenerationEvent) -> ProgressItem:
    """The card's line for a generation event (not a streamed piece)."""
    if isinstance(event, ProviderUnavailable):
        return ProgressItem(event.provider, "unavailable", _cut(event.reason))
    if isinstance(event, ProviderFailed):
        return ProgressItem(event.provider, "no program", _cut(event.reason))
    if isinstance(event, CorrectionStep):
        return ProgressItem(f"{event.provider}: {event.step}",
                            "valid" if event.valid else "still invalid", _cut(event.did))
    kind = event.kind if isinstance(event, ProviderTried) else ""
    return ProgressItem(event.provider, "trying", kind)


def generation_progress(events: list[GenerationEvent]) -> str:
    """What a generation has done so far, one line per step, and the program a model is
    writing (the latest streamed text) below them."""
    lines: list[str] = []
    streaming = ""
    for event in events:
        if isinstance(event, ProgramStreaming):
            streaming = f"{event.provider} is writing ({event.step}):\n{event.text}"
            continue
        streaming = ""
        if isinstance(event, ProviderTried):
            lines.append(f"trying {event.provider}")
        elif isinstance(event, ProviderUnavailable):
            lines.append(f"{event.provider}: {_cut(event.reason)}")
        elif isinstance(event, ProviderFailed):
            lines.append(f"{event.provider}: no program ({_cut(event.reason)})")
        elif isinstance(event, CorrectionStep):
            outcome = "a valid program" if event.valid else "still invalid"
            lines.append(f"{event.provider}: {event.step}: {_cut(event.did)}; {outcome}")
    return "\n".join([*lines, streaming] if streaming else lines)


def _cut(text: str) -> str:
    return text if len(text) <= PROGRESS_REASON else text[:PROGRESS_REASON - 3] + "..."


def kit_label(kit: Any) -> str:
    """A kit as ``%kit`` takes it: a name, or tool,tool,..."""
    return kit if isinstance(kit, str) else ",".join(kit or ())
