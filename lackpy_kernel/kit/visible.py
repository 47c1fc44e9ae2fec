"""Text as a person can see it: every character that is not plainly visible is escaped.

What a person approves must read as what lands, so a name or a line shown for approval
escapes control characters and escape sequences, bidi and zero-width marks, separators
other than the space (a no-break space reads as one), the default-ignorable code points
(U+034F, variation selectors, U+3164 and the other Hangul fillers), U+2800 (a blank braille
pattern), private-use, surrogate and unassigned code points; a byte that was not UTF-8
(carried as a lone surrogate, ``surrogateescape``) shows as ``\\xNN``. A tab is kept and
counts as 8 columns where widths are measured.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["TAB_COLUMNS", "columns", "cut", "plain", "visible"]

TAB_COLUMNS = 8
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
# Printable to Python, invisible or blank to a person (Unicode's Default_Ignorable_Code_Point
# and the blank-looking letters and symbols).
_BLANK_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)
_BLANK = re.compile("[" + "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in _BLANK_RANGES)
                    + "]")


def visible(text: str) -> str:
    """``text`` with each character that is not plainly visible escaped (see the module);
    the space and the tab are kept."""
    if plain(text):
        return text
    return "".join(char if char in " \t" or not _hidden(char) else _escaped(char)
                   for char in text)


def plain(text: str) -> bool:
    """Whether every character of ``text`` is plainly visible, so ``visible`` returns it as
    it is (a tab, which ``visible`` keeps, still makes this False)."""
    return text.isprintable() and (text.isascii() or _BLANK.search(text) is None)


def columns(text: str) -> int:
    """How many columns ``text`` takes, a tab as ``TAB_COLUMNS``."""
    return len(text) + (TAB_COLUMNS - 1) * text.count("\t")


def cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` columns (tabs counted as ``TAB_COLUMNS``), ``...`` added
    where it was cut."""
    if columns(text) <= limit:
        return text
    taken = width = 0
    for char in text:
        width += TAB_COLUMNS if char == "\t" else 1
        if width > limit:
            break
        taken += 1
    return text[:taken] + "..."


def _hidden(char: str) -> bool:
    return unicodedata.category(char) in _HIDDEN_CATEGORIES or _BLANK.match(char) is not None


def _escaped(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
