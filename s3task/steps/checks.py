"""Checks: a column's cells against Frictionless Table Schema's constraints, and the formats people need.

A failing row keeps its place and gets the check's words in its errors, e.g. ``Email: not an email
address``. Empty cells pass every constraint but ``required`` (as in Table Schema). ``unique`` needs the
whole file and runs in DuckDB (:mod:`s3task.steps.wholefile`); everything else here looks at one row.

The formats reuse what already knows them: the email rule of the "Check and enrich email addresses" task
type, and ``phonenumbers`` (Google's libphonenumber) for a country's phone numbers.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .block import Block
    from .spec import Step

POSTCODES = {
    "GB": r"^(GIR ?0AA|[A-PR-UWYZ][A-HK-Y]?[0-9][0-9A-HJKMNPR-Y]? ?[0-9][ABD-HJLNP-UW-Z]{2})$",
    "US": r"^[0-9]{5}(-[0-9]{4})?$",
    "DE": r"^[0-9]{5}$",
    "NL": r"^[1-9][0-9]{3} ?[A-Z]{2}$",
}
URL = r"^(?i)https?://[^\s/?#.][^\s/?#]*(\.[^\s/?#]+)*(:[0-9]+)?([/?#][^\s]*)?$"
E164 = r"^\+[1-9][0-9]{1,14}$"
FORMATS = ("email", "url", "phone", "iban", *(f"phone:{c}" for c in ("GB", "US", "DE", "NL", "FR")),
           *(f"postcode:{c}" for c in POSTCODES))  # fmt: skip
FORMAT_WORDS = {"email": "an email address", "url": "a web address (http:// or https://)", "iban": "a valid IBAN",
                "phone": "a phone number in international form (+ and up to 15 digits)"}  # fmt: skip


def read_check(step: Step) -> None:
    """Refuse a check that cannot run: a bad pattern or format, a minimum that is not a number or date."""
    from .dates import ISO_DATE_FORMAT, read_dates
    from .rows import NUMBER, check_pattern

    v = step.values
    fmt = v["format"]
    if fmt and fmt not in FORMATS and not re.fullmatch(r"phone:[A-Z]{2}", fmt):
        raise step.fail(f"there is no format {fmt!r} (the formats: {', '.join(FORMATS)}, phone:XX for a country)")
    if fmt.startswith("phone:"):
        _region(step, fmt)
    if v["pattern"]:
        check_pattern(f"{step.label}: the pattern", v["pattern"])
    for name in ("minimum", "maximum"):
        value = v[name]
        if value == "":
            continue
        if v["type"] == "text":
            raise step.fail(f'{name} needs the values to be numbers or dates ("type")')
        text = str(value)
        if v["type"] == "number" and not re.match(NUMBER, text):
            raise step.fail(f"{name} {text!r} is not a number")
        if v["type"] == "date":
            import pyarrow as pa
            import pyarrow.compute as pc

            if pc.any(read_dates(pa.array([text]), ISO_DATE_FORMAT)[1]).as_py() or not text:
                raise step.fail(f"{name} {text!r} is not a date written YYYY-MM-DD")
    for name in ("minLength", "maxLength"):
        value = v[name]
        if value != "" and (not isinstance(value, int) or value < 0):
            raise step.fail(f"{name} is a whole number of characters, 0 or more")
    check_type_column(step)
    constraints = ("required", "unique", "format", "pattern", "minimum", "maximum", "minLength", "maxLength", "enum")
    named = [c for c in constraints if v[c] is not False and v[c] not in ("", [], None)]  # 0 is a bound
    if not named and not v["not_before_column"] and v["type"] == "text":  # a type alone checks the cells are of it
        raise step.fail("it checks nothing: say what the cells must be (required, a format, a pattern, …)")


def _region(step: Step, fmt: str) -> str:
    import phonenumbers

    region = fmt.split(":", 1)[1]
    if region not in phonenumbers.SUPPORTED_REGIONS:
        raise step.fail(f"{region!r} is not a country code phonenumbers knows (e.g. GB, US, DE)")
    return region


def columns_of(step: Step) -> list[str]:
    other = step["not_before_column"]
    return [step["column"], *([other] if other else [])]


def apply(step: Step, block: Block) -> Block:
    """The block with this check's words added to the errors of the rows that fail (``unique`` aside)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    v, name = step.values, step["column"]
    cells = pc.utf8_trim_whitespace(block.table.column(name))
    filled = pc.not_equal(cells, "")
    if v["required"]:
        block = block.add_errors(pc.invert(filled), f"{name}: is required")
    if v["format"]:
        bad = pc.and_(filled, pc.invert(_fits_format(v["format"], cells, step)))
        words = FORMAT_WORDS.get(v["format"]) or _format_words(v["format"])
        block = block.add_errors(bad, f"{name}: not {words}")
    if v["pattern"]:
        bad = pc.and_(filled, pc.invert(pc.match_substring_regex(cells, f"^(?:{v['pattern']})$")))
        block = block.add_errors(bad, f"{name}: does not match the pattern {v['pattern']}")
    if v["enum"]:
        bad = pc.and_(filled, pc.invert(pc.is_in(cells, value_set=pa.array(v["enum"], pa.large_string()))))
        shown = ", ".join(v["enum"][:10]) + (", …" if len(v["enum"]) > 10 else "")
        block = block.add_errors(bad, f"{name}: not one of {shown}")
    for bound, words in (("minLength", "shorter than {} characters"), ("maxLength", "longer than {} characters")):
        if v[bound] != "":
            length = pc.utf8_length(cells)
            over = pc.less(length, v[bound]) if bound == "minLength" else pc.greater(length, v[bound])
            block = block.add_errors(pc.and_(filled, over), f"{name}: {words.format(v[bound])}")
    if v["type"] != "text" or v["not_before_column"]:
        block = _typed(step, block, cells, filled)
    return block


def _typed(step: Step, block: Block, cells: Any, filled: Any) -> Block:
    import pyarrow as pa
    import pyarrow.compute as pc

    v, name = step.values, step["column"]
    values, bad = _as(v["type"], cells)
    if v["type"] != "text":
        block = block.add_errors(bad, f"{name}: not a {'number' if v['type'] == 'number' else 'date (YYYY-MM-DD)'}")
    good = pc.and_(filled, pc.invert(bad))
    for bound, test, words in (("minimum", pc.less, "less than"), ("maximum", pc.greater, "more than")):
        if v[bound] != "":
            limit, _ = _as(v["type"], pa.array([str(v[bound])], pa.large_string()))
            block = block.add_errors(pc.and_(good, test(values, limit[0])), f"{name}: {words} {v[bound]}")
    other = v["not_before_column"]
    if other:
        theirs = pc.utf8_trim_whitespace(block.table.column(other))
        their_values, their_bad = _as(v["type"], theirs)
        both = pc.and_(good, pc.and_(pc.not_equal(theirs, ""), pc.invert(their_bad)))
        block = block.add_errors(pc.and_(both, pc.less(values, their_values)), f"{name}: before {other}")
    return block


def _as(kind: str, cells: Any) -> tuple[Any, Any]:
    """Cells as numbers or dates (or text): (values, which non-empty cells are not of the kind)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .dates import ISO_DATE_FORMAT, read_dates
    from .rows import NUMBER

    if isinstance(cells, pa.ChunkedArray):
        cells = cells.combine_chunks()
    if kind == "date":
        return read_dates(cells, ISO_DATE_FORMAT)
    if kind == "number":
        numeric = pc.match_substring_regex(cells, NUMBER)
        values = pc.cast(pc.if_else(numeric, cells, "0"), pa.float64())
        return values, pc.and_(pc.invert(numeric), pc.not_equal(cells, ""))
    return cells, pc.equal(cells, cells)


def _format_words(fmt: str) -> str:
    kind, _, region = fmt.partition(":")
    return f"a {region} {'phone number' if kind == 'phone' else 'postcode'}"


def _fits_format(fmt: str, cells: Any, step: Step) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    if fmt == "email":
        from ..email_rule import ADDRESS  # the same rule as the email task type

        return pc.match_substring_regex(pc.utf8_lower(cells), ADDRESS)
    if fmt == "url":
        return pc.match_substring_regex(cells, URL)
    if fmt == "phone":
        return pc.match_substring_regex(pc.replace_substring_regex(cells, r"[ ()-]", ""), E164)
    if fmt.startswith("postcode:"):
        return pc.match_substring_regex(pc.utf8_upper(cells), POSTCODES[fmt.split(":")[1]])
    values = cells.to_pylist()  # IBAN and a country's phones: one cell at a time, in Python
    if fmt == "iban":
        return pa.array([iban_ok(v) for v in values])
    region = _region(step, fmt)
    return pa.array([_phone_ok(v, region) for v in values])


def iban_ok(value: str | None) -> bool:
    """An IBAN with a good ISO 13616 checksum (mod 97 = 1); spaces allowed."""
    text = (value or "").replace(" ", "").upper()
    if not re.fullmatch(r"[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}", text):
        return False
    moved = text[4:] + text[:4]
    digits = "".join(str(int(ch, 36)) for ch in moved)
    return int(digits) % 97 == 1


def _phone_ok(value: str | None, region: str) -> bool:
    import phonenumbers

    if not value:
        return True
    try:
        number = phonenumbers.parse(value, region)
    except phonenumbers.NumberParseException:
        return False
    # a valid number in the country's numbering plan, with or without its code (+1 415 … is not a GB number)
    return phonenumbers.is_valid_number(number) and number.country_code == phonenumbers.country_code_for_region(region)


def unique_words(name: str) -> str:
    return f"{name}: repeats an earlier row's value"


def check_type_column(step: Step) -> None:
    if step["not_before_column"] and step["type"] == "text":
        raise step.fail('comparing with another column needs the values to be numbers or dates ("type")')
