"""Word tools for the notebook: a Python tool source (plugin = "python").

Each public function with a docstring is a tool; lackpy describes it from its
signature and docstring, and runs it in the sandbox with the program.
"""

import re
from collections import Counter


def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(re.findall(r"[a-z]+", text.lower()))


def top_words(text: str, n: int = 3) -> list[str]:
    """The n most frequent words of four letters or more, most frequent first."""
    words = [word for word in re.findall(r"[a-z]+", text.lower()) if len(word) >= 4]
    return [word for word, _ in Counter(words).most_common(n)]
