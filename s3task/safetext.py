"""Free text that reaches a terminal or a log: task names, user names, anything a user typed.

A name is printed by ``s3task list`` / ``show`` and in log lines, where a control character
rewrites the operator's screen (``ESC[31m``, ``\\r`` over a line, a fake row after ``\\n``, NUL) and
a bidirectional override or a zero-width character makes text read as something it is not. So
new names refuse them (:func:`unsafe_character`; :func:`check_name`, the one rule for every name a
user gives: a task's, a recipe's), and whatever is printed from records already
stored shows them as escapes instead (:func:`visible`).

Refused: Unicode categories Cc (C0, DEL, C1 controls), Cf (format characters: the bidirectional
overrides and isolates U+202A–202E and U+2066–2069, the marks U+200E/U+200F/U+061C, zero-width
U+200B–200D, U+2060, U+FEFF, soft hyphen), Zl / Zp (U+2028, U+2029, which some terminals and
editors take as line breaks) and Cs (lone surrogates, which are not text) — except where real
writing needs a format character: the zero-width joiner and non-joiner (U+200D, U+200C) between two
visible characters (emoji sequences such as 👩‍💻, Persian and Indic words), and the tag characters
U+E0020–E007F that follow a black flag (the flags of Scotland, Wales, England).
"""

from __future__ import annotations

import unicodedata

from .errors import InvalidInput

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def is_unsafe(char: str) -> bool:
    return unicodedata.category(char) in _UNSAFE_CATEGORIES


_JOINERS = frozenset({"\u200c", "\u200d"})
_BLACK_FLAG = "\U0001f3f4"


def _is_tag(char: str) -> bool:
    return 0xE0020 <= ord(char) <= 0xE007F


def _shows(char: str) -> bool:
    return not is_unsafe(char) and not char.isspace()


def _unsafe_at(text: str, i: int) -> bool:
    """Whether ``text[i]`` is refused where it stands (a joiner or a tag character depends on its neighbours)."""
    char = text[i]
    if char in _JOINERS:
        return not (0 < i < len(text) - 1 and _shows(text[i - 1]) and _shows(text[i + 1]))
    if _is_tag(char):
        return not (i > 0 and (text[i - 1] == _BLACK_FLAG or _is_tag(text[i - 1])))
    return is_unsafe(char)


def unsafe_character(text: str) -> str | None:
    """A description of the first character ``text`` may not hold (``U+202E RIGHT-TO-LEFT OVERRIDE``), or None."""
    for i, char in enumerate(text):
        if _unsafe_at(text, i):
            return describe(char)
    return None


def check_name(name: str, what: str, longest: int) -> str:
    """``name`` without the spaces around it, if it may name a ``what`` (``"task"``, ``"recipe"``): 1 to
    ``longest`` characters of visible text and spaces. Otherwise :class:`InvalidInput` in plain words."""
    name = (name or "").strip()
    if not name:
        raise InvalidInput(f"give the {what} a name")
    if len(name) > longest:
        raise InvalidInput(f"the {what} name is longer than {longest} characters")
    if unsafe := unsafe_character(name):
        raise InvalidInput(f"the {what} name may hold only visible text and spaces, not {unsafe}")
    return name


def describe(char: str) -> str:
    name = unicodedata.name(char, "") or _CONTROL_NAMES.get(ord(char), "a control character")
    return f"U+{ord(char):04X} {name}"


def visible(text: str) -> str:
    """``text`` with every character :func:`unsafe_character` refuses written as a ``\\uXXXX`` escape.

    The escape is also JSON's, so the output of ``json.dumps(..., ensure_ascii=False)`` passed
    through here still parses to the same value (JSON itself already escapes C0 controls)."""
    if unsafe_character(text) is None:
        return text
    return "".join(_escape(c) if _unsafe_at(text, i) else c for i, c in enumerate(text))


def _escape(char: str) -> str:
    code = ord(char)
    if code > 0xFFFF:  # as JSON writes it: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


#: unicodedata has no names for control characters; the ones a terminal acts on.
_CONTROL_NAMES = {
    0x00: "NUL",
    0x07: "BELL",
    0x08: "BACKSPACE",
    0x09: "TAB",
    0x0A: "LINE FEED",
    0x0D: "CARRIAGE RETURN",
    0x1B: "ESCAPE",
    0x7F: "DELETE",
    0x85: "NEXT LINE",
    0x9B: "CONTROL SEQUENCE INTRODUCER",
}
