# ruff: noqa: E501  (a table of intents: one phrasing and its file a row)
"""Writes ``intents.json``, ``split.json`` and ``baseline_prompt.txt`` (run once, before any tuning;
see PROTOCOL.md). Each intent's expectation is computed here from the fixture workspace of
``bench_generation.py`` (``FILES``); its reference program, which the file also keeps, is checked to
produce it with the ``debug`` kit, so every expectation is reachable in lackpy.

    python benchmarks/generation/make_intents.py          # writes the three files
    python benchmarks/generation/make_intents.py --check  # only checks the reference programs
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench_generation import FILES, INTENTS, files_matching, lines, text  # noqa: E402

SEED = 20261129
DEV_SHARE = 0.6


def paths(found: list[str]) -> dict[str, Any]:
    return {"expected": found, "check": "paths"}


def same(value: Any) -> dict[str, Any]:
    return {"expected": value, "check": "same"}


def mentions(*needles: str) -> dict[str, Any]:
    return {"expected": None, "check": "mentions", "needles": list(needles)}


CASES: list[tuple[str, str, str, dict[str, Any]]] = []  # (kind, intent, reference program, expectation)


def add(kind: str, intent: str, program: str, expectation: dict[str, Any]) -> None:
    CASES.append((kind, intent, program, expectation))


def words(name: str) -> list[str]:
    return text(name).split()


# --- reading --------------------------------------------------------------------------------------
for phrase, name in [("show me {f}", "todo.txt"), ("what's in {f}?", "docs/intro.md"),
                     ("print the contents of {f}", "config.json"), ("{f} contents", "src/models.py"),
                     ("open {f} and give me everything in it", "docs/guide.md"),
                     ("raed {f}", "src/cli.py")]:
    add("read", phrase.format(f=name), f"read_file({name!r})", same(text(name)))

# --- counting lines, characters, words ------------------------------------------------------------
for phrase, name in [("how many lines are in {f}?", "todo.txt"), ("number of lines in {f}", "ABOUT.md"),
                     ("line count of {f}", "src/util.py"), ("count the lines of {f} please", "docs/guide.md"),
                     ("how many lines does {f} contain", "tests/test_app.py"),
                     ("{f}: how many lines", "data/people.csv"), ("cout lines in {f}", "src/models.py")]:
    add("count_lines", phrase.format(f=name), f"len(read_file({name!r}).splitlines())",
        same(len(lines(name))))
for phrase, name in [("how many characters does {f} have", "todo.txt"),
                     ("character count of {f}", "config.json"), ("length of {f} in characters", "ABOUT.md"),
                     ("how long is {f}, in chars?", "docs/intro.md"),
                     ("count the characters in {f}", "src/cli.py"), ("nubmer of characters in {f}", "notes.txt")]:
    add("count_chars", phrase.format(f=name), f"len(read_file({name!r}))", same(len(text(name))))
for phrase, name in [("how many words are in {f}?", "todo.txt"), ("word count of {f}", "docs/guide.md"),
                     ("count the words in {f}", "notes.txt"), ("number of words in {f}", "docs/intro.md"),
                     ("{f} word count", "src/cli.py"), ("how many wrods does {f} have", "data/people.csv")]:
    add("count_words", phrase.format(f=name), f"len(read_file({name!r}).split())", same(len(words(name))))

# --- one line ---------------------------------------------------------------------------------------
for phrase, name in [("what is the first line of {f}?", "notes.txt"), ("first line of {f}", "ABOUT.md"),
                     ("give me the opening line of {f}", "src/app.py"),
                     ("the first line in {f}", "docs/guide.md"), ("frist line of {f}", "data/people.csv")]:
    add("first_line", phrase.format(f=name), f"read_file({name!r}).splitlines()[0]", same(lines(name)[0]))
for phrase, name in [("what is the last line of {f}?", "todo.txt"), ("last line of {f}", "data/people.csv"),
                     ("give me the final line of {f}", "docs/intro.md"),
                     ("the last line in {f}", "src/models.py"), ("lsat line of {f}", "src/util.py")]:
    add("last_line", phrase.format(f=name), f"read_file({name!r}).splitlines()[-1]", same(lines(name)[-1]))
for phrase, name, n in [("what's line {n} of {f}?", "notes.txt", 3), ("line number {n} in {f}", "todo.txt", 2),
                        ("show line {n} of {f}", "data/people.csv", 4)]:
    add("nth_line", phrase.format(f=name, n=n), f"read_file({name!r}).splitlines()[{n - 1}]",
        same(lines(name)[n - 1]))

# --- all lines, transformed -----------------------------------------------------------------------
for phrase, name in [("the lines of {f} in uppercase", "todo.txt"), ("uppercase every line of {f}", "docs/intro.md"),
                     ("give me {f} in capital letters, line by line", "data/people.csv"),
                     ("lines of {f}, upper case", "src/cli.py"), ("shout the lines of {f}", "notes.txt")]:
    add("upper", phrase.format(f=name), f"[line.upper() for line in read_file({name!r}).splitlines()]",
        same([x.upper() for x in lines(name)]))
for phrase, name in [("the lines of {f} in lowercase", "ABOUT.md"), ("lowercase every line of {f}", "todo.txt"),
                     ("{f} lines in lower case", "data/people.csv"), ("lower-case the lines of {f}", "docs/guide.md")]:
    add("lower", phrase.format(f=name), f"[line.lower() for line in read_file({name!r}).splitlines()]",
        same([x.lower() for x in lines(name)]))
for phrase, name in [("sort the lines of {f}", "notes.txt"), ("lines of {f} in alphabetical order", "data/people.csv"),
                     ("alphabetize {f}", "src/models.py"), ("give me {f}'s lines sorted", "docs/guide.md"),
                     ("srot the lines in {f}", "ABOUT.md")]:
    add("sorted", phrase.format(f=name), f"sorted(read_file({name!r}).splitlines())", same(sorted(lines(name))))
for phrase, name in [("the lines of {f} backwards", "todo.txt"), ("reverse the lines of {f}", "data/people.csv"),
                     ("{f} from the last line to the first", "docs/intro.md"),
                     ("lines of {f} in reverse", "src/cli.py")]:
    add("reversed", phrase.format(f=name), f"read_file({name!r}).splitlines()[::-1]", same(lines(name)[::-1]))
for phrase, name, n in [("the first {n} lines of {f}", "todo.txt", 2), ("top {n} lines of {f}", "ABOUT.md", 4),
                        ("give me the first {n} lines in {f}", "src/app.py", 3),
                        ("head -n {n} {f}", "data/people.csv", 2), ("first five lines of {f}", "notes.txt", 5)]:
    add("head", phrase.format(f=name, n=n), f"read_file({name!r}).splitlines()[:{n}]", same(lines(name)[:n]))
for phrase, name, n in [("the last {n} lines of {f}", "notes.txt", 2), ("bottom {n} lines of {f}", "todo.txt", 3),
                        ("tail -n {n} {f}", "data/people.csv", 2), ("last two lines of {f}", "src/util.py", 2)]:
    add("tail", phrase.format(f=name, n=n), f"read_file({name!r}).splitlines()[-{n}:]", same(lines(name)[-n:]))
for phrase, name, sep in [("join the lines of {f} with semicolons", "todo.txt", ";"),
                          ("{f} as one line, separated by ' | '", "notes.txt", " | "),
                          ("put the lines of {f} on one line with spaces between them", "docs/intro.md", " "),
                          ("join {f}'s lines with dashes", "data/people.csv", "-")]:
    add("join", phrase.format(f=name), f"{sep!r}.join(read_file({name!r}).splitlines())",
        same(sep.join(lines(name))))
for phrase, name in [("the words of the last line of {f}", "todo.txt"),
                     ("split the first line of {f} into words", "ABOUT.md"),
                     ("words in the final line of {f}", "docs/guide.md")]:
    index = 0 if "first" in phrase else -1
    add("line_words", phrase.format(f=name), f"read_file({name!r}).splitlines()[{index}].split()",
        same(lines(name)[index].split()))

# --- searching inside a file ---------------------------------------------------------------------
for phrase, name, word in [("which lines of {f} mention {w}?", "todo.txt", "milk"),
                           ("lines in {f} containing '{w}'", "src/app.py", "return"),
                           ("grep {w} {f}", "ABOUT.md", "Usage"), ("find the lines with {w} in {f}", "notes.txt", "ta"),
                           ("show every line of {f} that has {w} in it", "src/util.py", "read_settings"),
                           ("lines of {f} that mention {w}", "data/people.csv", "A")]:
    add("grep", phrase.format(f=name, w=word),
        f"[line for line in read_file({name!r}).splitlines() if {word!r} in line]",
        same([x for x in lines(name) if word in x]))
for phrase, name, word in [("does {f} mention {w}?", "todo.txt", "Ada"), ("is the word {w} in {f}", "notes.txt", "omega"),
                           ("does {f} contain {w}", "ABOUT.md", "users"), ("{w} in {f}? yes or no", "config.json", "demo"),
                           ("is there a {w} anywhere in {f}?", "src/util.py", "helper"),
                           ("does {f} say {w}", "docs/guide.md", "Intro")]:
    add("contains", phrase.format(f=name, w=word), f"{word!r} in read_file({name!r})", same(word in text(name)))
for phrase, name, word in [("how many times does {w} appear in {f}?", "src/app.py", "return"),
                           ("count occurrences of '{w}' in {f}", "notes.txt", "e"),
                           ("number of times the letter {w} occurs in {f}", "todo.txt", "l"),
                           ("how often is {w} used in {f}", "src/util.py", "read_settings"),
                           ("count the {w}s in {f}", "data/people.csv", ",")]:
    add("count_text", phrase.format(f=name, w=word), f"read_file({name!r}).count({word!r})",
        same(text(name).count(word)))
for phrase, name, word in [("how many lines of {f} contain {w}", "src/app.py", "def"),
                           ("count the lines in {f} that mention {w}", "todo.txt", "i"),
                           ("number of lines with '{w}' in {f}", "ABOUT.md", "#")]:
    add("count_grep", phrase.format(f=name, w=word),
        f"len([line for line in read_file({name!r}).splitlines() if {word!r} in line])",
        same(sum(word in x for x in lines(name))))
for phrase, name, prefix in [("lines of {f} starting with {p}", "src/app.py", "def"),
                             ("which lines in {f} begin with '{p}'", "ABOUT.md", "##"),
                             ("lines of {f} that start with the letter {p}", "data/people.csv", "A")]:
    add("startswith", phrase.format(f=name, p=prefix),
        f"[line for line in read_file({name!r}).splitlines() if line.startswith({prefix!r})]",
        same([x for x in lines(name) if x.startswith(prefix)]))
for phrase, name in [("how many empty lines does {f} have", "docs/guide.md"),
                     ("count the blank lines in {f}", "src/app.py"), ("number of blank lines, {f}", "src/util.py")]:
    add("blank", phrase.format(f=name), f"len([line for line in read_file({name!r}).splitlines() if not line.strip()])",
        same(sum(1 for x in lines(name) if not x.strip())))
for phrase, name in [("how many non-empty lines are in {f}", "ABOUT.md"),
                     ("count the lines of {f} that aren't blank", "src/cli.py"),
                     ("the non-blank lines of {f}", "docs/guide.md")]:
    expectation = ([x for x in lines(name) if x.strip()] if phrase.startswith("the")
                   else sum(1 for x in lines(name) if x.strip()))
    program = f"[line for line in read_file({name!r}).splitlines() if line.strip()]"
    add("nonblank", phrase.format(f=name), program if phrase.startswith("the") else f"len({program})",
        same(expectation))
for phrase, name in [("how long is the longest line of {f}", "todo.txt"), ("longest line in {f}", "ABOUT.md"),
                     ("which line of {f} is the longest?", "src/app.py"),
                     ("length of the shortest line in {f}", "notes.txt")]:
    if phrase.startswith("length of the shortest"):
        add("extreme", phrase.format(f=name), f"min([len(line) for line in read_file({name!r}).splitlines()])",
            same(min(len(x) for x in lines(name))))
    elif phrase.startswith("how long"):
        add("extreme", phrase.format(f=name), f"max([len(line) for line in read_file({name!r}).splitlines()])",
            same(max(len(x) for x in lines(name))))
    else:
        add("extreme", phrase.format(f=name), f"max(read_file({name!r}).splitlines(), key=len)",
            same(max(lines(name), key=len)))

# --- the csv --------------------------------------------------------------------------------------
csv = "data/people.csv"
rows = [row.split(",") for row in lines(csv)[1:]]
add("csv", "the ages in data/people.csv", f"[row.split(',')[1] for row in read_file({csv!r}).splitlines()[1:]]",
    {"expected": [age for _, age in rows], "check": "same_or_numbers"})
add("csv", "list the people in people.csv", f"[row.split(',')[0] for row in read_file({csv!r}).splitlines()[1:]]",
    same([name for name, _ in rows]))
add("csv", "how many people are listed in data/people.csv?", f"len(read_file({csv!r}).splitlines()) - 1",
    same(len(rows)))
add("csv", "column names of people.csv", f"read_file({csv!r}).splitlines()[0].split(',')", same(["name", "age"]))
add("csv", "who is the oldest person in data/people.csv",
    f"max(read_file({csv!r}).splitlines()[1:], key=lambda row: int(row.split(',')[1])).split(',')[0]",
    same(max(rows, key=lambda row: int(row[1]))[0]))
add("csv", "sum of the ages in people.csv",
    f"sum([int(row.split(',')[1]) for row in read_file({csv!r}).splitlines()[1:]])", same(sum(int(a) for _, a in rows)))
add("csv", "data/people.csv without its header row", f"read_file({csv!r}).splitlines()[1:]", same(lines(csv)[1:]))

# --- finding files --------------------------------------------------------------------------------
for phrase, pattern, suffix, folder in [
        ("list all the .txt files", "**/*.txt", ".txt", ""), ("find every python file", "**/*.py", ".py", ""),
        ("which csv files are there?", "**/*.csv", ".csv", ""), ("json files in the project", "**/*.json", ".json", ""),
        ("show me the python files under tests", "tests/**/*.py", ".py", "tests/"),
        ("md files in docs", "docs/*.md", ".md", "docs/"), ("all markdown documents", "**/*.md", ".md", ""),
        ("glob for **/*.txt", "**/*.txt", ".txt", ""), ("what files are in the data folder", "data/*", "", "data/"),
        ("list evrything under src", "src/**/*", "", "src/"), ("every file in the workspace", "**/*", "", "")]:
    add("find_files", phrase, f"find_files({pattern!r})", paths(files_matching(suffix, folder)))
for phrase, pattern, suffix, folder in [
        ("how many .txt files are there?", "**/*.txt", ".txt", ""), ("count the python files in tests", "tests/**/*.py", ".py", "tests/"),
        ("number of files in src", "src/**/*", "", "src/"), ("how many files does the docs folder hold", "docs/**/*", "", "docs/"),
        ("count all files in the workspace", "**/*", "", ""), ("how many json files", "**/*.json", ".json", ""),
        ("total number of markdown files under docs", "docs/**/*.md", ".md", "docs/"),
        ("how many pyhton files are in src?", "src/**/*.py", ".py", "src/")]:
    add("count_files", phrase, f"len(find_files({pattern!r}))", same(len(files_matching(suffix, folder))))
for phrase, pattern, expected in [("is there a file called todo.txt?", "**/todo.txt", True),
                                  ("does the project have a README.md", "**/README.md", False),
                                  ("is there a models.py somewhere", "**/models.py", True),
                                  ("do we have a setup.py?", "**/setup.py", False),
                                  ("is there any csv file", "**/*.csv", True)]:
    add("exists", phrase, f"len(find_files({pattern!r})) > 0", same(expected))
for phrase, word in [("which files mention main?", "main"), ("files that contain the word App", "App"),
                     ("in which files does 'milk' appear", "milk"), ("which files talk about users", "users"),
                     ("find the files that mention read_settings", "read_settings")]:
    add("grep_files", phrase, f"[path for path in find_files('**/*') if {word!r} in read_file(path)]",
        paths(sorted(name for name in FILES if word in FILES[name])))
for phrase, folder in [("total lines across the python files in tests", "tests/"),
                       ("how many lines do the markdown files in docs have altogether", "docs/"),
                       ("sum the line counts of all .txt files", "")]:
    suffix = ".txt" if "txt" in phrase else (".py" if "python" in phrase else ".md")
    pattern = f"{folder}**/*{suffix}" if folder else f"**/*{suffix}"
    add("total_lines", phrase, f"sum([len(read_file(path).splitlines()) for path in find_files({pattern!r})])",
        same(sum(len(lines(name)) for name in files_matching(suffix, folder))))
for phrase, pattern, suffix, folder in [("the biggest python file in src", "src/*.py", ".py", "src/"),
                                        ("which .txt file is the longest", "**/*.txt", ".txt", "")]:
    add("largest_file", phrase, f"max(find_files({pattern!r}), key=lambda path: len(read_file(path)))",
        same(max(files_matching(suffix, folder), key=lambda name: len(text(name)))))

# --- definitions and callers ----------------------------------------------------------------------
DEFINED = {"App": "src/app.py", "load": "src/app.py", "main": "src/app.py", "run": "src/cli.py",
           "helper": "src/util.py", "Order": "src/models.py", "test_main": "tests/test_app.py"}
for phrase, name in [("where is App defined?", "App"), ("which file defines load", "load"),
                     ("in what file is the main function", "main"), ("definition of run", "run"),
                     ("find where helper is declared", "helper"), ("locate the class Order", "Order"),
                     ("where's test_main defined", "test_main"), ("wher is the Order class", "Order")]:
    add("definition", phrase, f"find_definitions({name!r})", mentions(DEFINED[name]))
for phrase, name, line in [("on which line is load defined?", "load", 8), ("line number of the class App", "App", 4),
                           ("what line defines helper", "helper", 5)]:
    add("definition_line", phrase, f"find_definitions({name!r})[0]['line']", same(line))
for phrase, name, kind in [("is App a class or a function?", "App", "class"), ("what kind of thing is run", "run", "function")]:
    add("definition_kind", phrase, f"find_definitions({name!r})[0]['kind']", same(kind))
for phrase, name in [("how many classes are defined in src/models.py", "src/models.py"),
                     ("count the functions in src/util.py", "src/util.py"),
                     ("how many classes does src/app.py define", "src/app.py")]:
    keyword = "class " if "class" in phrase else "def "
    add("count_defs", phrase, f"len([line for line in read_file({name!r}).splitlines() if line.startswith({keyword!r})])",
        same(sum(x.startswith(keyword) for x in lines(name))))
CALLERS = {"main": ["run", "test_main"], "read_settings": ["load", "helper"], "load": ["main"], "App": ["main"]}
for phrase, name in [("who calls main?", "main"), ("what calls App", "App"), ("callers of read_settings", "read_settings"),
                     ("which functions use load", "load"), ("find the callers of main", "main"),
                     ("list the functions that call read_settings", "read_settings"), ("whoo calls load", "load")]:
    add("callers", phrase, f"[call['caller'] for call in find_callers({name!r})]", mentions(*CALLERS[name]))
for phrase, name in [("how many places call main?", "main"), ("count the calls to read_settings", "read_settings"),
                     ("number of call sites of App", "App")]:
    add("count_callers", phrase, f"len(find_callers({name!r}))", same(len(CALLERS[name])))
for phrase, name in [("in which files is main called", "main"), ("which files call read_settings", "read_settings")]:
    found = sorted({"src/cli.py", "tests/test_app.py"} if name == "main" else {"src/app.py", "src/util.py"})
    add("caller_files", phrase, f"sorted(set([call['file'] for call in find_callers({name!r})]))", paths(found))
for phrase, name in [("does anything call Order?", "Order"), ("is helper called anywhere", "helper"),
                     ("is load ever called?", "load")]:
    add("called", phrase, f"len(find_callers({name!r})) > 0", same(name == "load"))


def records() -> list[dict[str, Any]]:
    project = {case.intent.lower() for case in INTENTS}
    out = []
    for number, (kind, intent, program, expectation) in enumerate(CASES, 1):
        if intent.lower() in project:
            raise SystemExit(f"{intent!r} is one of the project's intents")
        out.append({"id": f"g{number:03d}", "kind": kind, "intent": intent, "program": program, **expectation})
    return out


BASELINE: list[str] = []  # the plain prompt, as the kit gives it (set by check)


def plain_prompt(kit: Any) -> str:
    """The plain 5-shot prompt's fixed part: the tools and the kit's first five examples."""
    from lackpy_kernel.infer.prompt import Example, format_example

    pool = [example for spec in kit.tools.values() for example in spec.examples]
    examples = "\n\n".join(format_example(Example.coerce(e)) for e in pool[:5])
    return f"Tools:\n{kit.description}\n\n{examples}"


def check(cases: list[dict[str, Any]]) -> list[str]:
    """The cases whose reference program does not produce their expectation."""
    from bench_generation import correct_output

    from lackpy_kernel.kit import builtin_toolbox, resolve_kit
    from lackpy_kernel.lang import validate
    from lackpy_kernel.run.runner import RestrictedRunner

    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        for name, content in FILES.items():
            (workspace / name).parent.mkdir(parents=True, exist_ok=True)
            (workspace / name).write_text(content)
        kit = resolve_kit("debug", builtin_toolbox(workspace))
        BASELINE.append(plain_prompt(kit))
        wrong = []
        for case in cases:
            verdict = validate(case["program"], set(kit.callables))
            result = RestrictedRunner().run(case["program"], kit.callables) if verdict.valid else None
            if result is None or not result.success or not correct_output(case, result.output):
                wrong.append(f"{case['id']} {case['intent']!r}: {verdict.errors or (result and result.error)} "
                             f"{result and result.output!r}")
        return wrong


def main() -> int:
    cases = records()
    wrong = check(cases)
    for line in wrong:
        print(line)
    if wrong or "--check" in sys.argv:
        print(f"{len(cases)} intents, {len(wrong)} wrong")
        return 1 if wrong else 0
    ids = [case["id"] for case in cases]
    shuffled = random.Random(SEED).sample(ids, len(ids))
    cut = round(len(ids) * DEV_SHARE)
    (HERE / "baseline_prompt.txt").write_text(BASELINE[0] + "\n")
    (HERE / "intents.json").write_text(json.dumps(cases, indent=1) + "\n")
    (HERE / "split.json").write_text(json.dumps(
        {"seed": SEED, "dev_share": DEV_SHARE, "dev": sorted(shuffled[:cut]), "test": sorted(shuffled[cut:])},
        indent=1) + "\n")
    print(f"{len(cases)} intents: dev {cut}, test {len(ids) - cut}, seed {SEED}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
