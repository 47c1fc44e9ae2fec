"""The ratchet's bookkeeping: which intent wrote which program, template counts, recordings.

``create`` saves a verified program as a template, so the same intent later costs no
model call. Without a pattern it takes the intent that last produced the same program,
from the intent log kept here (``.lackpy/intents.jsonl``, the last ``INTENT_LOG_LIMIT``),
written behind the caller as the usage record is (see ``lackpy_kernel.telemetry.write_behind``).
A run of a template's program counts in that template's frontmatter; with
``[inference] record = true`` a model's programs are appended to ``.lackpy/replay.jsonl``
so notebooks replay without the model.
"""

from __future__ import annotations

import ast
import json
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from lackpy_kernel.errors import TemplateError
from lackpy_kernel.infer import KIND_TEMPLATE, GenerationResult, record_generation
from lackpy_kernel.infer.tiers import REPLAY_FILE, update_counts
from lackpy_kernel.kit.atomic import atomic_write_text
from lackpy_kernel.telemetry import USAGE_FILE, flush_writes, record_answer, unwritten, write_behind

INTENT_LOG = "intents.jsonl"
INTENT_LOG_LIMIT = 200

_log = logging.getLogger("lackpy_kernel.ratchet")
_warned: set[Path] = set()


class Ratchet:
    """Records what the inference tiers wrote and how their programs ran, in ``config_dir``.

    ``record`` appends model-written programs to the replay file; ``notice`` hears of a
    template count that could not be written (it never fails the caller's program). The
    intent log and the usage record are written behind the caller; an intent log that
    cannot be written is logged once.
    """

    def __init__(self, config_dir: Path, *, record: bool = False,
                 notice: Callable[[str], None] = lambda message: None) -> None:
        self.config_dir = config_dir
        self.record = record
        self._notice = notice

    @property
    def intent_log(self) -> Path:
        """The file that keeps the last intents and the programs they produced."""
        return self.config_dir / INTENT_LOG

    def generated(self, intent: str, generated: GenerationResult, tool_names: Iterable[str]) -> None:
        """Remember that ``intent`` produced ``generated``, record a model's program, and count
        an answer from a template, rule or replay in the usage record."""
        tools = sorted(set(tool_names))
        write_behind(_save_intents, self.intent_log, {
            "intent": intent, "program": generated.program, "tools": tools,
            "tier": generated.provider_name})
        if not generated.from_model:  # a model call saved, for `lackpy usage`
            record_answer(self.config_dir / USAGE_FILE, kind=generated.kind, tier=generated.provider_name)
        if self.record and generated.from_model:
            record_generation(self.config_dir / REPLAY_FILE, intent, tools, generated.program,
                              generated.provider_name)

    def flush(self) -> None:
        """Write the intent log's and the usage record's pending entries now (this process's,
        for every workspace); a clean exit does it too."""
        flush_writes()

    def ran(self, generated: GenerationResult, success: bool) -> None:
        """Count a run of a template's program in that template's success or fail count."""
        if generated.kind != KIND_TEMPLATE or not generated.source:
            return
        try:
            update_counts(Path(generated.source), success)
        except (OSError, TemplateError) as exc:
            self._notice(f"could not count the run in {generated.source}: {exc}")

    def intent_for(self, program: str) -> str | None:
        """The intent that last produced ``program`` (compared by syntax tree), or None."""
        wanted = _normalise(program)
        waiting = unwritten(_save_intents, self.intent_log)  # before the file: see unwritten
        for entry in reversed([*_read_log(self.intent_log), *waiting]):
            if _normalise(entry.get("program", "")) == wanted:
                intent = entry.get("intent")
                return intent if isinstance(intent, str) else None
        return None


def _save_intents(path: Path, entries: list[dict[str, Any]]) -> None:
    """Append ``entries`` to the intent log at ``path``, keeping the last ``INTENT_LOG_LIMIT``;
    a log that cannot be written is logged once."""
    kept = [*_read_log(path), *entries][-INTENT_LOG_LIMIT:]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, "".join(json.dumps(entry) + "\n" for entry in kept))
    except OSError as exc:
        if path not in _warned:
            _warned.add(path)
            _log.warning("could not save the intent log to %s: %s; `create` without a pattern "
                         "cannot find the intents it would have kept", path, exc)


def _read_log(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def _normalise(program: object) -> str:
    if not isinstance(program, str):
        return ""
    try:
        return ast.dump(ast.parse(program))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return program.strip()
