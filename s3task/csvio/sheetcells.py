"""The cells of a piece of worksheet XML, as Excel shows them, found with Arrow's regular expressions.

A worksheet part is ``<row>`` elements of ``<c r="B7" s="3" t="s"><v>12</v></c>`` cells. A Python
loop over the 1.2 million cells of 200,000 rows × 6 took 3.3 s with ``re`` before rendering a
single value (openpyxl's ElementTree parse: 10-20 s of CPU), so a piece of XML is cut at ``<c `` and
each attribute and value is pulled out of all its cells at once by Arrow's RE2 kernels; Python only
touches the rare values that need it (an entity, a rich-text run, a code with separators).

A text longer than a cell holds in Excel (32,767 characters) is refused, naming its cell, and a shared
string is copied for the cells that name it only while a block's text stays within
:data:`MAX_BLOCK_TEXT`: a small workbook whose cells all name one long string cannot unpack to gigabytes.

Values are rendered as text the way Excel shows them where that is data, not decoration
(:mod:`.sheetnumbers` renders the numbers): numbers in their shortest form (``0.1``, ``12``),
dates and times as ISO 8601 when the cell's number format is a date or time format, codes
zero-padded as their format says (``00123`` under ``00000``), percentages as shown (``12.5%``),
booleans ``TRUE``/``FALSE``, error values as their text (``#N/A``), a formula by the value saved
with it. Other number formats (thousands separators, currencies, a fixed count of decimals) are
not applied: the number is given in full.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidInput
from .common import TEXT
from .sheetnumbers import AGAIN, Style, numbers_shown

MAX_ROWS = 1_048_576  # Excel's last row
MAX_COLUMNS = 16_384  # Excel's last column, XFD
#: Excel's longest cell, in its characters (UTF-16 code units: an emoji is two). A longer text is no
#: workbook Excel wrote, and one shared string named by many cells would be copied once for each of them.
MAX_CELL_CHARS = 32_767
#: The text one block of cells may unpack to: a piece of sheet XML whose cells name long shared strings
#: more than this is read in smaller pieces; a single row over it is refused (no sheet Excel writes has one).
MAX_BLOCK_TEXT = 32 << 20


def decode_text(values: pa.Array) -> pa.Array:
    """XML text to text: entities (``&amp;``) and OOXML's ``_x000D_`` escapes, for the few values with one."""
    marked = pc.or_(pc.match_substring(values, "&"), pc.match_substring(values, "_x"))
    if not pc.any(marked).as_py():
        return values
    fixed = [_unescape(v) for v in pc.filter(values, marked).to_pylist()]
    return pc.replace_with_mask(values, marked, pa.array(fixed, values.type))


def _unescape(value: str) -> str:
    value = re.sub(r"_x([0-9A-Fa-f]{4})_", lambda m: chr(int(m.group(1), 16)), value)
    return html.unescape(value) if "&" in value else value


def string_texts(items: pa.Array) -> pa.Array:
    """The text of each ``<si>`` (shared string) or ``<is>`` (inline string): its ``<t>`` runs joined."""
    first = pc.struct_field(pc.extract_regex(items, r"<(?:\w+:)?t(?:\s[^>]*)?>(?P<t>[^<]*)<"), [0])
    first = pc.fill_null(first, "")
    runs = pc.greater(pc.count_substring_regex(items, r"<(?:\w+:)?t[\s>]"), 1)
    if pc.any(runs).as_py():  # rich text: several runs; phonetic hints (<rPh>) are not part of the text
        joined = [_join_runs(v) for v in pc.filter(items, runs).to_pylist()]
        first = pc.replace_with_mask(first, runs, pa.array(joined, first.type))
    return decode_text(first)


def _join_runs(item: str) -> str:
    item = re.sub(r"<(?:\w+:)?rPh\b.*?</(?:\w+:)?rPh>", "", item, flags=re.S)
    return "".join(re.findall(r"<(?:\w+:)?t(?:\s[^>]*)?>([^<]*)<", item))


#: The cell as Excel, xlsxwriter, openpyxl and LibreOffice write it (attributes r, s, t in that order, no
#: prefix): one pass of one pattern reads it. Any other cell does not match, and is read by _SLOW's patterns.
#: An inline string may hold line breaks (openpyxl writes a cell's text inline): ``(?s:…)`` lets ``.`` take them.
_FAST = (
    r'^r="(?P<col>[A-Z]{1,3})(?P<row>[0-9]{1,7})"(?: s="(?P<s>[0-9]+)")?(?: t="(?P<t>[a-zA-Z]+)")?'
    r"(?:/>|>(?:<f\b[^>]*?(?:/>|>[^<]*</f>))?(?:<v>(?P<v>[^<]*)</v>)?(?P<is><is>(?s:.*?)</is>)?</c>)"
)
_SLOW = {
    "col": r'^[^>]*?\br="(?P<col>[A-Z]{1,3})[0-9]',
    "row": r'^[^>]*?\br="[A-Z]{1,3}(?P<row>[0-9]{1,7})"',
    "s": r'^[^>]*?\bs="(?P<s>[0-9]+)"',
    "t": r'^[^>]*?\bt="(?P<t>\w+)"',
    "v": r"^[^>]*>(?:<(?:\w+:)?f\b[^>]*?(?:/>|>[^<]*</(?:\w+:)?f>))?<(?:\w+:)?v>(?P<v>[^<]*)<",
    "is": r"^[^>]*>(?P<is><(?:\w+:)?is>(?s:.*?)</(?:\w+:)?is>)",
}


def _fields(cells: pa.Array) -> dict[str, pa.Array]:
    """Each cell's reference, style, type, saved value and inline string (null where it has none)."""
    found = pc.extract_regex(cells, _FAST)
    fields = {name: pc.struct_field(found, [i]) for i, name in enumerate(_SLOW)}
    missed = pc.is_null(found)
    if found.null_count:
        others = pc.filter(cells, missed)
        for name, pattern in _SLOW.items():
            slow = pc.struct_field(pc.extract_regex(others, pattern), [0])
            fields[name] = pc.replace_with_mask(fields[name], missed, slow)
    return fields


def _or(field: pa.Array, default: str) -> pa.Array:
    """A field, with ``default`` where a cell has none (RE2 gives "" for a group that took no part, or null)."""
    filled = pc.fill_null(field, default)
    return pc.if_else(pc.equal(filled, ""), default, filled)


def text_array(piece: bytes) -> pa.Array:
    """XML as one Arrow text value (its UTF-8 checked by Arrow)."""
    try:
        return pa.array([piece], pa.large_binary()).cast(TEXT)
    except pa.ArrowInvalid as e:
        raise InvalidInput("the workbook is damaged (its text is not UTF-8) — " + AGAIN) from e


@dataclass(frozen=True)
class Shared:
    """A workbook's shared strings: their texts, each one's size in UTF-8 bytes (int32: 4 bytes a string), and
    the numbers of those longer than a cell holds (their text is dropped: a cell that names one is refused)."""

    texts: pa.Array
    sizes: np.ndarray
    too_long: np.ndarray  # sorted string numbers

    @classmethod
    def of(cls, texts: pa.Array) -> Shared:
        sizes = np.array(pc.binary_length(texts), dtype=np.int32)  # a copy of its own: written below
        over = np.flatnonzero(sizes > MAX_CELL_CHARS)  # UTF-16 units never outnumber UTF-8 bytes
        too_long = np.array([i for i in over.tolist() if excel_length(texts[i].as_py()) > MAX_CELL_CHARS], np.int64)
        if len(too_long):
            mask = np.zeros(len(texts), bool)
            mask[too_long] = True
            texts = pc.if_else(pa.array(mask), pa.scalar("", texts.type), texts)
            sizes[too_long] = 0
        return cls(texts, sizes, too_long)

    @classmethod
    def concat(cls, parts: list[Shared]) -> Shared:
        if not parts:
            return cls.of(pa.array([], TEXT))
        offsets = np.cumsum([0] + [len(p.texts) for p in parts[:-1]])
        too_long = np.concatenate([p.too_long + at for p, at in zip(parts, offsets, strict=True)])
        texts = parts[0].texts if len(parts) == 1 else pa.concat_arrays([p.texts for p in parts])
        return cls(texts, np.concatenate([p.sizes for p in parts]), too_long)


def excel_length(text: str) -> int:
    """A text's length as Excel counts it: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


class TooMuchText(Exception):
    """A piece of several rows whose cells would unpack to more than :data:`MAX_BLOCK_TEXT`: read it in halves."""


@dataclass
class Cells:
    """The cells of a piece of a sheet: Excel row number, column number (A = 1), shown text, text-typed."""

    rows: np.ndarray
    columns: np.ndarray
    values: pa.Array
    is_text: np.ndarray


def cells_of(
    piece: bytes, shared: Shared, styles: list[Style], date1904: bool, beyond: str | None = None, sheet: str = ""
) -> Cells:
    """The non-empty cells of ``piece``, whole ``<row>`` elements of a worksheet's ``sheetData``. ``beyond``: the
    text of a cell whose shared string is past those in ``shared`` (None: such a cell is damage). ``sheet``
    names the sheet in what is refused: a text longer than Excel's cell, a row of more text than any sheet has.
    Raises :class:`TooMuchText` for a piece of several rows whose texts unpack to more than a block holds."""
    tag = b"<c "
    if tag not in piece and (prefixed := re.search(rb"<(\w+:)c ", piece)):
        tag = b"<" + prefixed.group(1) + b"c "
    # What comes before the first "<c " is no cell.
    cells = pc.list_flatten(pc.split_pattern(text_array(piece), tag.decode()))[1:]
    fields = _fields(cells)
    if fields["row"].null_count or fields["col"].null_count:
        raise InvalidInput(
            "the workbook has cells without a cell reference, which this reader does not follow — " + AGAIN
        )
    rows = fields["row"].cast(pa.int32()).to_numpy()  # at most 7 digits (int32: half the memory a block holds)
    columns = _column_numbers(fields["col"])
    kinds = _or(fields["t"], "n")
    raw = pc.fill_null(fields["v"], "")
    strings = pc.equal(kinds, "s")
    index = _shared_index(pc.filter(raw, strings), shared, beyond)
    picked = strings.to_numpy(zero_copy_only=False)
    _check_shared(index, shared, rows[picked], columns[picked], sheet, len(piece))
    values = _text_values(fields["is"], kinds, raw, strings, _texts(shared, beyond).take(index))
    _check_lengths(values, rows, columns, sheet)
    numbers = pc.equal(kinds, "n")
    if pc.any(numbers).as_py():
        style_ids = _or(fields["s"], "0").cast(pa.int64()).to_numpy()
        values = numbers_shown(values, numbers, raw, style_ids, styles, date1904)
    keep = pc.not_equal(values, "").to_numpy(zero_copy_only=False)
    is_text = pc.is_in(kinds, pa.array(["s", "inlineStr", "str"])).to_numpy(zero_copy_only=False)
    return Cells(rows[keep], columns[keep], pc.filter(values, pa.array(keep)), is_text[keep])


def column_letters(number: int) -> str:
    letters = ""
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _shared_index(refs: pa.Array, shared: Shared, beyond: str | None) -> np.ndarray:
    """The shared string each ``t="s"`` cell names; past the last one (a preview's): the ``beyond`` marker's."""
    index = refs.cast(pa.int64()).to_numpy(zero_copy_only=False) if len(refs) else np.zeros(0, np.int64)
    count = len(shared.texts)
    if beyond is not None:
        index = np.minimum(index, count)
        count += 1
    if len(index) and (int(index.max()) >= count or int(index.min()) < 0):
        raise InvalidInput("the workbook is damaged (a cell refers to a text that is not there) — " + AGAIN)
    return index


def _texts(shared: Shared, beyond: str | None) -> pa.Array:
    return shared.texts if beyond is None else pa.concat_arrays([shared.texts, pa.array([beyond], shared.texts.type)])


def _check_shared(
    index: np.ndarray, shared: Shared, rows: np.ndarray, columns: np.ndarray, sheet: str, xml: int
) -> None:
    """Refuse a cell naming a shared string longer than a cell holds, before any is copied for the cells that
    name it; a piece whose cells would copy more text than a block holds is read in halves (one row: refused)."""
    known = index < len(shared.texts)  # the rest: a preview's marker for a text not sent
    if len(shared.too_long):
        too_long = np.isin(index, shared.too_long) & known
        if too_long.any():
            at = int(np.flatnonzero(too_long)[0])
            raise InvalidInput(_too_long(int(rows[at]), int(columns[at]), sheet))
    text = int(shared.sizes[index[known]].sum(dtype=np.int64)) + xml
    if text > MAX_BLOCK_TEXT:
        if len(np.unique(rows)) > 1:
            raise TooMuchText
        raise InvalidInput(
            f"row {int(rows[0]):,} of sheet {sheet!r} holds more than {MAX_BLOCK_TEXT >> 20} MB of text, "
            "which no sheet Excel writes does — " + AGAIN
        )


def _check_lengths(values: pa.Array, rows: np.ndarray, columns: np.ndarray, sheet: str) -> None:
    """Refuse an inline string, a formula's text or a saved value longer than a cell holds, naming its cell."""
    sizes = pc.binary_length(values.cast(pa.large_binary())).to_numpy(zero_copy_only=False)
    for at in np.flatnonzero(sizes > MAX_CELL_CHARS).tolist():  # UTF-16 units never outnumber UTF-8 bytes
        if excel_length(values[at].as_py()) > MAX_CELL_CHARS:
            raise InvalidInput(_too_long(int(rows[at]), int(columns[at]), sheet))


def _too_long(row: int, column: int, sheet: str) -> str:
    return (
        f"cell {column_letters(column)}{row} of sheet {sheet!r} holds a text longer than {MAX_CELL_CHARS:,} "
        "characters, the most a cell in Excel holds — shorten it, save the workbook and upload it again"
    )


def _column_numbers(letters: pa.Array) -> np.ndarray:
    """Column letters to numbers (A = 1, XFD = 16,384; int32), all at once: padded to three with '@' (= 0)."""
    padded = pc.utf8_lpad(letters, 3, "@").cast(pa.binary())
    codes = np.frombuffer(padded.buffers()[2], np.uint8)[: 3 * len(letters)].reshape(-1, 3).astype(np.int32) - 64
    numbers = (codes[:, 0] * 26 + codes[:, 1]) * 26 + codes[:, 2]
    if len(numbers) and numbers.max() > MAX_COLUMNS:
        raise InvalidInput("the workbook has a cell beyond column XFD, Excel's last — it is not a workbook Excel wrote")
    return numbers


def _text_values(inline_xml: pa.Array, kinds: pa.Array, raw: pa.Array, strings: pa.Array, named: pa.Array) -> pa.Array:
    """Each cell's text: its saved value, the shared string it names (``named``, for the ``strings`` cells),
    its inline string or TRUE/FALSE; a number's raw value for :func:`~.sheetnumbers.numbers_shown`."""
    values = pc.if_else(pc.equal(kinds, "n"), raw, decode_text(raw))  # str, e (#N/A), d: the saved text
    if len(named):
        values = pc.replace_with_mask(values, strings, named)
    inline = pc.equal(kinds, "inlineStr")
    if pc.any(inline).as_py():
        values = pc.replace_with_mask(values, inline, string_texts(pc.filter(inline_xml, inline)))
    booleans = pc.equal(kinds, "b")
    if pc.any(booleans).as_py():
        shown = pc.if_else(pc.equal(pc.filter(raw, booleans), "1"), pa.scalar("TRUE", TEXT), pa.scalar("FALSE", TEXT))
        values = pc.replace_with_mask(values, booleans, shown)
    return values
