"""The columns a task type needs from a file, and which of the file's columns each one is.

A task type declares what it needs (:class:`Need`: a name, the parameter that names the chosen
column, the header names it goes by, what its values look like). :func:`match` finds the column:

1. the one the person chose (the parameter), by its exact header, then ignoring case and spaces;
2. a header that is one of the need's names, ignoring case, spaces and punctuation (``E-Mail
   Address`` is ``emailaddress``), the first name in the need's order winning; then a header with
   one of its ``contains`` words as a word of its own, or at its start or end (``work_email_2``,
   ``PrimaryEmail``; not ``Kunde;Mail;Betrag``, a line of another delimiter read as one name), unless
   enough of its values are there to show they are not the need's (``email_opt_in`` holding yes/no);
3. the values: the column where most of the first :data:`SAMPLE_ROWS` non-empty values look like
   the need's (at least :data:`LOOKS_LIKE_SHARE` of them, and at least :data:`MIN_VALUES` values).

The New task page shows the match and lets the person change it (their choice travels as the
parameter); submit refuses a file in which a needed column is not found, naming it, before
anything is queued (:func:`require`, called by the submit check); the worker finds the same
column from the same header and first rows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..errors import InvalidInput

#: The data rows whose values a match looks at: the first ones, the same at submit, on the page and in the worker.
SAMPLE_ROWS = 200
#: The share of a column's non-empty sampled values that must look right for the values to decide.
LOOKS_LIKE_SHARE = 0.8
#: Fewer non-empty values than this never decide.
MIN_VALUES = 3

How = Literal["chosen", "header", "values", "none"]


@dataclass(frozen=True)
class Need:
    """A column a task type needs."""

    #: What staff call it ("email address"), used in messages and on the page.
    label: str
    #: The task's parameter that names the chosen column (its header); empty means "find it".
    param: str
    #: Header names that mean this column, normalised (:func:`key`), best first.
    aliases: tuple[str, ...] = ()
    #: Words a header may contain to mean this column (normalised), tried after ``aliases``.
    contains: tuple[str, ...] = ()
    #: A regular expression a value of this column matches (after trimming, lower-cased); None: no look.
    looks_like: str | None = None


@dataclass(frozen=True)
class Match:
    """Which column of the file a need is, and how that was decided."""

    need: Need
    column: str | None
    how: How

    def describe(self) -> str:
        """One line for the page: "email address: column “Mail” (found by its header)"."""
        if self.column is None:
            return f"{self.need.label}: no column found"
        why = {"chosen": "as chosen", "header": "found by its header", "values": "found by its values"}[self.how]
        return f"{self.need.label}: column “{self.column}” ({why})"


def key(header: str) -> str:
    """A header as matching sees it: lower case, letters and digits only."""
    return re.sub(r"[\W_]+", "", header.lower())


def _listed(columns: Sequence[str]) -> str:
    return ", ".join(repr(c) for c in columns) or "(none)"


def chosen_column(columns: Sequence[str], wanted: str) -> str:
    """The column named ``wanted``: its exact header, else ignoring case and surrounding spaces."""
    if wanted in columns:
        return wanted
    for column in columns:
        if column.strip().lower() == wanted.strip().lower():
            return column
    raise InvalidInput(f"there is no column named {wanted!r}; columns are: {_listed(columns)}")


def by_header(need: Need, columns: Sequence[str], sample: Mapping[str, Sequence[str]] | None = None) -> str | None:
    """A header that is one of the need's names; else one holding one of its words whose values (when
    there are enough to tell) look like the need's: ``email_opt_in`` holding yes/no is not the email."""
    keys = {column: key(column) for column in columns}
    for alias in need.aliases:
        for column, k in keys.items():
            if k == alias:
                return column
    for word in need.contains:
        for column, k in keys.items():
            named = word in words(column) or k.startswith(word) or k.endswith(word)
            if named and share_alike(need, (sample or {}).get(column, ())) in (None, True):
                return column
    return None


def words(header: str) -> list[str]:
    """A header's words, lower case: split at spaces, punctuation and camel case (``workEmail_2``: work, email, 2)."""
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", header)]


def share_alike(need: Need, values: Sequence[str]) -> bool | None:
    """Whether enough of the first non-empty values look like the need's (None: too few to tell, or no look)."""
    alike = share(need, values)
    return None if alike is None else alike >= LOOKS_LIKE_SHARE


def share(need: Need, values: Sequence[str]) -> float | None:
    """The share of the first :data:`SAMPLE_ROWS` non-empty values that look like the need's; None: fewer
    than :data:`MIN_VALUES` of them, or a need with no look."""
    if need.looks_like is None:
        return None
    filled = [v.strip().lower() for v in values[:SAMPLE_ROWS] if v and v.strip()]
    if len(filled) < MIN_VALUES:
        return None
    pattern = re.compile(need.looks_like)
    return sum(1 for v in filled if pattern.search(v)) / len(filled)


def by_values(need: Need, columns: Sequence[str], sample: Mapping[str, Sequence[str]]) -> str | None:
    """The column whose sampled values look most like the need's, if enough of them do."""
    best: tuple[float, str] | None = None
    for column in columns:
        alike = share(need, sample.get(column, ()))
        if alike is not None and alike >= LOOKS_LIKE_SHARE and (best is None or alike > best[0]):
            best = (alike, column)
    return best[1] if best else None


def match(need: Need, columns: Sequence[str], sample: Mapping[str, Sequence[str]], chosen: str = "") -> Match:
    """Which column ``need`` is (``chosen``: the person's choice, refused if the file has no such column)."""
    if chosen:
        return Match(need, chosen_column(columns, chosen), "chosen")
    column = by_header(need, columns, sample)
    if column is not None:
        return Match(need, column, "header")
    column = by_values(need, columns, sample)
    return Match(need, column, "values" if column is not None else "none")


def match_all(
    needs: Sequence[Need], params: Mapping[str, object], columns: Sequence[str], sample: Mapping[str, Sequence[str]]
) -> list[Match]:
    """Every need's match, the chosen columns taken from ``params``."""
    return [match(n, columns, sample, str(params.get(n.param) or "")) for n in needs]


def require(
    needs: Sequence[Need], params: Mapping[str, object], columns: Sequence[str], sample: Mapping[str, Sequence[str]]
) -> dict[str, str]:
    """The chosen or found column of every need, by parameter; a need with none is refused, named."""
    found = {}
    for m in match_all(needs, params, columns, sample):
        if m.column is None:
            raise InvalidInput(
                f"no {m.need.label} column found; columns are: {_listed(columns)}; "
                f"set the '{m.need.param.replace('_', ' ')}' parameter"
            )
        found[m.need.param] = m.column
    return found
