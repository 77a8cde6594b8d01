"""GREL, as much as these expressions need: OpenRefine's tokenizer (MetaParser, then grel.Scanner), its
string literals and the reading of a one-function call on ``value``.
"""

from __future__ import annotations

import unicodedata

from .table import _Refused


def _tokens(expression: str) -> list[tuple[str, str]]:
    """A GREL expression's tokens as OpenRefine reads them (MetaParser, then grel.Scanner): ("name", text),
    ("string", its value), ("regex", its text), ("delimiter", one of . ( ) ,) or ("other", text)."""
    colon = expression.find(":")
    if colon >= 0 and expression[:colon].lower() in ("grel", "gel"):
        expression = expression[colon + 1 :]  # any other prefix: a language GREL does not read, or part of GREL
    out: list[tuple[str, str]] = []
    i, end = 0, len(expression)
    while i < end:
        c = expression[i]
        if _java_space(c):
            i += 1
        elif c in "\"'":
            text, i = _string(expression, i)
            out.append(("string", text))
        elif c == "/":
            close = expression.find("/", i + 1)
            out.append(("regex", expression[i : close + 1] if close > 0 else expression[i:]))
            i = end if close < 0 else close + 1
        elif c.isalpha() or c == "_":
            start = i
            while i < end and (expression[i].isalnum() or expression[i] == "_"):
                i += 1
            out.append(("name", expression[start:i]))
        elif c in ".(),":
            out.append(("delimiter", c))
            i += 1
        else:
            out.append(("other", c))
            i += 1
    return out


def _java_space(c: str) -> bool:
    """Java's Character.isWhitespace, which the Scanner skips between tokens."""
    if c in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f":
        return True
    return c not in "\xa0\u2007\u202f" and unicodedata.category(c) in ("Zs", "Zl", "Zp")


def _string(expression: str, i: int) -> tuple[str, int]:
    """A string literal from its opening quote: \\t, \\n, \\r and \\\\ are escapes, a backslash before any other
    character is that character (grel.Scanner), so there are no \\u escapes."""
    quote, i = expression[i], i + 1
    text: list[str] = []
    while i < len(expression):
        c = expression[i]
        if c == quote:
            return "".join(text), i + 1
        if c == "\\":
            i += 1
            if i < len(expression):
                text.append({"t": "\t", "n": "\n", "r": "\r"}.get(expression[i], expression[i]))
        else:
            text.append(c)
        i += 1
    raise _Refused(f"its expression {expression!r} has a text that is not closed")


def _call(expression: str) -> tuple[str, list[tuple[str, str]]]:
    """``value.f(a, b)`` or ``f(value, a, b)``: f and the one-token arguments after value; else refused."""
    tokens = _tokens(expression)
    value, dot, opening, closing = ("name", "value"), ("delimiter", "."), ("delimiter", "("), ("delimiter", ")")
    refused = _Refused(f's3task imports the expressions value.trim() and value.replace("…", "…"), not {expression!r}')
    if len(tokens) >= 5 and tokens[0] == value and tokens[1] == dot and tokens[3] == opening:
        function, inside = tokens[2], tokens[4:-1]
    elif len(tokens) >= 4 and tokens[1] == opening and tokens[2] == value:
        function, inside = tokens[0], tokens[3:-1]
        if inside:
            if inside[0] != ("delimiter", ","):
                raise refused
            inside = inside[1:]
    else:
        raise refused
    if function[0] != "name" or tokens[-1] != closing:
        raise refused
    arguments: list[tuple[str, str]] = []
    if inside:
        if len(inside) % 2 != 1:
            raise refused
        for k, token in enumerate(inside):
            if k % 2 == 1:
                if token != ("delimiter", ","):
                    raise refused
            elif token[0] not in ("string", "regex", "name", "other"):
                raise refused
            else:
                arguments.append(token)
    return function[1], arguments
