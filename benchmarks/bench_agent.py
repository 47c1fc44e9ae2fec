"""One model call writing a checked program, against a model calling tools turn by turn.

    PYTHONPATH=. python benchmarks/bench_agent.py [--repeat N] [--latency S] [--sandbox]

For each of 22 intents over a small project (notes, Python sources, a README), measured in
the same run, both approaches answer with the same information:

- one-shot (``%delegate``-style): the Anthropic tier is asked once for a lackpy program,
  which is validated and run (``service.delegate``);
- the agent loop (``%agent``): ``Agent(LLMEngine(...))`` whose model calls the same tools
  turn by turn (independent calls of a turn together, as a good tool-calling model does)
  and then answers.

The model is a loopback server speaking the Anthropic protocol through the real client,
scripted per intent so both approaches succeed (each run is checked: the program's output,
the agent's calls and answer). It counts tokens the same way for both: a token per four
bytes of each request's body (input) and of each answer's text and tool calls (output).
Round trips are requests to the model. Wall time is measured with a model that answers at
once, plus ``--latency`` seconds per request when given; a last table adds a typical
hosted model's time per round trip to each approach's measured time. Programs run in this
process unless ``--sandbox`` (then both run in the sandbox worker).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lackpy_kernel.engines import Agent, LLMEngine
from lackpy_kernel.service import LackpyService
from tests.support import loopback as lb

KIT = "debug"
MODELED_LATENCY_S = (0.5, 1.0)  # seconds per round trip of a hosted model, for the last table

FILES = {
    "notes/monday.txt": "plan the sprint\nreview the agent loop\nlunch with the team\n",
    "notes/tuesday.txt": "write the replay notebook\nmeasure the agent loop\n",
    "notes/wednesday.txt": "demo day\nfix the flaky test\nread the seed again\nship it\n",
    "notes/thursday.txt": "plan the retro\n",
    "src/app.py": ("from util import helper\n\n\ndef main():\n    # TODO: parse arguments\n"
                   "    return helper(2)\n\n\nclass Shape:\n    def area(self):\n"
                   "        return 0\n\n\nclass Circle(Shape):\n    def area(self):\n"
                   "        return 3\n"),
    "src/util.py": ("def helper(n):\n    # TODO: check n\n    return n * 2\n\n\n"
                    "def report(shape):\n    return helper(shape.area())\n"),
    "src/cli.py": "from app import main\n\n\ndef run():\n    return main()\n",
    "README.md": "# demo\n\nInstall with pip install demo.\nRun demo --help.\n",
    "docs/guide.md": "# guide\n\nInstall first, then run.\n",
}
NOTES = sorted(path for path in FILES if path.startswith("notes/"))
SOURCES = sorted(path for path in FILES if path.startswith("src/"))


def find(pattern: str) -> tuple[str, dict[str, Any]]:
    return ("find_files", {"pattern": pattern})


def read(path: str) -> tuple[str, dict[str, Any]]:
    return ("read_file", {"path": path})


def reads(paths: list[str]) -> list[tuple[str, dict[str, Any]]]:
    return [read(path) for path in paths]


@dataclass
class Case:
    """An intent, the one-shot program a model would write for it, and the turns of calls a
    tool-calling model would make (its final answer is added: the program's output)."""

    intent: str
    program: str
    turns: list[list[tuple[str, dict[str, Any]]]]


CASES = [
    Case("how many lines does each note have",
         "{p: len(read_file(p).splitlines()) for p in find_files('notes/*.txt')}",
         [[find("notes/*.txt")], reads(NOTES)]),
    Case("count every word in the notes",
         "sum([len(read_file(p).split()) for p in find_files('notes/*.txt')])",
         [[find("notes/*.txt")], reads(NOTES)]),
    Case("which note is the longest",
         "max(find_files('notes/*.txt'), key=lambda p: len(read_file(p)))",
         [[find("notes/*.txt")], reads(NOTES)]),
    Case("sizes of the python sources",
         "{p: len(read_file(p)) for p in find_files('src/*.py')}",
         [[find("src/*.py")], reads(SOURCES)]),
    Case("where is main defined and who calls it",
         "{'defined': find_definitions('main'), 'called': find_callers('main')}",
         [[("find_definitions", {"name": "main"}), ("find_callers", {"name": "main"})]]),
    Case("which functions call helper",
         "[c['caller'] for c in find_callers('helper')]",
         [[("find_callers", {"name": "helper"})]]),
    Case("which notes mention the plan",
         "[p for p in find_files('notes/*.txt') if 'plan' in read_file(p)]",
         [[find("notes/*.txt")], reads(NOTES)]),
    Case("count the TODO comments in the sources",
         "sum([read_file(p).count('TODO') for p in find_files('src/*.py')])",
         [[find("src/*.py")], reads(SOURCES)]),
    Case("the first line of every note",
         "{p: read_file(p).splitlines()[0] for p in find_files('notes/*.txt')}",
         [[find("notes/*.txt")], reads(NOTES)]),
    Case("where are Shape and Circle defined",
         "[find_definitions('Shape'), find_definitions('Circle')]",
         [[("find_definitions", {"name": "Shape"}), ("find_definitions", {"name": "Circle"})]]),
    Case("how many markdown documents are there",
         "len(find_files('**/*.md'))",
         [[find("**/*.md")]]),
    Case("what does the readme say about installing",
         "[line for line in read_file('README.md').splitlines() if 'install' in line.lower()]",
         [[read("README.md")]]),
    Case("compare the sizes of app.py and util.py",
         "{'app': len(read_file('src/app.py')), 'util': len(read_file('src/util.py'))}",
         [[read("src/app.py"), read("src/util.py")]]),
    Case("which notes are shorter than three lines",
         "[p for p in find_files('notes/*.txt') if len(read_file(p).splitlines()) < 3]",
         [[find("notes/*.txt")], reads(NOTES)]),
    Case("who calls area and where is it defined",
         "{'defined': find_definitions('area'), 'called': find_callers('area')}",
         [[("find_definitions", {"name": "area"}), ("find_callers", {"name": "area"})]]),
    Case("how many lines of python are in src",
         "sum([len(read_file(p).splitlines()) for p in find_files('src/*.py')])",
         [[find("src/*.py")], reads(SOURCES)]),
    Case("callers of helper grouped by file",
         "grouped = {}\nfor c in find_callers('helper'):\n"
         "    grouped[c['file']] = grouped.get(c['file'], []) + [c['caller']]\ngrouped",
         [[("find_callers", {"name": "helper"})]]),
    Case("is there any test file in the project",
         "len(find_files('**/test_*.py')) > 0",
         [[find("**/test_*.py")]]),
    Case("the last line of the last note",
         "read_file(sorted(find_files('notes/*.txt'))[-1]).splitlines()[-1]",
         [[find("notes/*.txt")], [read(NOTES[-1])]]),
    Case("lines and words of each note",
         "{p: {'lines': len(read_file(p).splitlines()), 'words': len(read_file(p).split())} "
         "for p in find_files('notes/*.txt')}",
         [[find("notes/*.txt")], reads(NOTES)]),
    Case("which python source is the largest",
         "max(find_files('src/*.py'), key=lambda p: len(read_file(p)))",
         [[find("src/*.py")], reads(SOURCES)]),
    Case("what do the docs say about installing, and where is run defined",
         "{'docs': [l for p in find_files('docs/*.md') for l in read_file(p).splitlines() "
         "if 'Install' in l], 'run': find_definitions('run')}",
         [[find("docs/*.md"), ("find_definitions", {"name": "run"})], reads(["docs/guide.md"])]),
]


@dataclass
class Tally:
    """What one approach cost on one intent."""

    round_trips: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: list[float] = field(default_factory=list)

    @property
    def wall(self) -> float:
        return statistics.median(self.seconds)


def delayed(step: lb.Step, latency: float) -> lb.Step:
    def slow(handler: Any, request: lb.Request) -> None:
        time.sleep(latency)
        step(handler, request)

    return slow if latency else step


def count(server: lb.LoopbackServer, since: int, answers: list[str]) -> tuple[int, int, int]:
    requests = server.requests[since:]
    tokens_in = sum(lb.usage_of(request, "")[0] for request in requests)
    tokens_out = sum(lb.usage_of(requests[0], answer)[1] for answer in answers)
    return len(requests), tokens_in, tokens_out


async def one_shot(case: Case, service: LackpyService, server: lb.LoopbackServer,
                   latency: float) -> tuple[Any, tuple[int, int, int], float]:
    since = len(server.requests)
    server.script(delayed(lb.anthropic_answer(case.program), latency))
    started = time.perf_counter()
    answer = await service.delegate(case.intent, KIT)
    seconds = time.perf_counter() - started
    assert answer["success"] and answer["generation_tier"] == "bench", (case.intent, answer)
    return answer["output"], count(server, since, [case.program]), seconds


async def agent_loop(case: Case, expected: Any, agent: Agent, server: lb.LoopbackServer,
                     latency: float) -> tuple[tuple[int, int, int], float]:
    since = len(server.requests)
    final = f"Answer: {json.dumps(expected)}"
    server.script(*[delayed(lb.tool_turn("anthropic", "", calls), latency) for calls in case.turns],
                  delayed(lb.tool_turn("anthropic", final), latency))
    started = time.perf_counter()
    envelope = await agent.arun(case.intent)
    seconds = time.perf_counter() - started
    assert envelope.ok and envelope.payload == final, (case.intent, envelope.error)
    assert all(entry.success for entry in envelope.trace), case.intent
    answers = [lb.turn_text("", calls) for calls in case.turns] + [final]
    return count(server, since, answers), seconds


async def measure(folder: Path, server: lb.LoopbackServer, repeat: int, latency: float,
                  sandbox: bool) -> list[tuple[Case, Tally, Tally]]:
    (folder / ".lackpy").mkdir()
    (folder / ".lackpy" / "config.toml").write_text(
        f'[inference]\norder = ["bench"]\n\n[inference.providers.bench]\nplugin = "anthropic"\n'
        f'base_url = "{server.url}"\nretry_delay = 0.001\n\n'
        f'[sandbox]\nenabled = {"true" if sandbox else "false"}\n')
    results = []
    with LackpyService(folder) as service:
        engine = LLMEngine("claude-haiku-4-5-20251001", provider="bench", workspace=folder)
        agent = Agent(engine, tools=KIT, service=service)
        for case in CASES:
            shot, loop = Tally(), Tally()
            for _ in range(repeat):
                expected, counts, seconds = await one_shot(case, service, server, latency)
                shot.round_trips, shot.tokens_in, shot.tokens_out = counts
                shot.seconds.append(seconds)
                counts, seconds = await agent_loop(case, expected, agent, server, latency)
                loop.round_trips, loop.tokens_in, loop.tokens_out = counts
                loop.seconds.append(seconds)
            results.append((case, shot, loop))
    return results


def report(results: list[tuple[Case, Tally, Tally]], latency: float, sandbox: bool) -> None:
    where = "in the sandbox" if sandbox else "in this process"
    print(f"{len(results)} intents, kit {KIT!r}, programs {where}, model latency {latency:g} s "
          f"a request; agent / one-shot ratios\n")
    metrics = ("round trips", "tokens in", "tokens out", "wall ms")
    print(f"{'':40}" + "".join(f"{name:>23}" for name in metrics))
    print(f"{'intent':40}" + "".join(f"{'agent':>8}{'1-shot':>8}{'ratio':>7}" for _ in metrics))
    for case, shot, loop in results:
        pairs = ((loop.round_trips, shot.round_trips), (loop.tokens_in, shot.tokens_in),
                 (loop.tokens_out, shot.tokens_out), (loop.wall * 1e3, shot.wall * 1e3))
        cells = "".join(f"{_number(a):>8}{_number(b):>8}{a / b:>6.2f}x" for a, b in pairs)
        print(f"{case.intent[:39]:40}{cells}")
    totals = {name: (sum(getattr(loop, name) for _, _, loop in results),
                     sum(getattr(shot, name) for _, shot, _ in results))
              for name in ("round_trips", "tokens_in", "tokens_out", "wall")}
    print("\ntotal over all intents (agent loop vs one-shot program):")
    for name, label in (("round_trips", "model round trips"), ("tokens_in", "input tokens"),
                        ("tokens_out", "output tokens"), ("wall", "wall time, s")):
        loop_total, shot_total = totals[name]
        shown = (f"{loop_total:.3f} vs {shot_total:.3f}" if name == "wall"
                 else f"{loop_total} vs {shot_total}")
        print(f"  {label:18} {shown:>24}   ratio {loop_total / shot_total:5.2f}x")
    loop_trips, shot_trips = totals["round_trips"]
    loop_wall, shot_wall = totals["wall"]
    for per_trip in MODELED_LATENCY_S:
        modeled_loop = loop_wall + loop_trips * per_trip
        modeled_shot = shot_wall + shot_trips * per_trip
        print(f"  with {per_trip:g} s a round trip (modeled): {modeled_loop:.1f} s vs "
              f"{modeled_shot:.1f} s   ratio {modeled_loop / modeled_shot:5.2f}x")


def _number(value: float) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each intent (median)")
    parser.add_argument("--latency", type=float, default=0.0,
                        help="seconds the model server waits before each answer")
    parser.add_argument("--sandbox", action="store_true", help="run programs in the sandbox")
    options = parser.parse_args()
    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-bench-only"
    for name in ("ANTHROPIC_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory() as temporary, lb.LoopbackServer() as server:
        folder = Path(temporary)
        for path, text in FILES.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text)
        results = asyncio.run(measure(folder, server, options.repeat, options.latency,
                                      options.sandbox))
    report(results, options.latency, options.sandbox)


if __name__ == "__main__":
    sys.exit(main())
