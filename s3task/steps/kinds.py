# ruff: noqa: E501  (a declaration table: one kind a few lines, kept as written)
"""Every kind of step and check, declared once (see :mod:`s3task.steps.spec`).

Names follow what staff and other tools already call these things: OpenRefine's operations for the
column and text steps (:mod:`s3task.steps.openrefine` imports its history), Frictionless Table
Schema's constraint names for the checks (``required``, ``unique``, ``pattern``, ``enum``,
``minimum``, ``maximum``, ``minLength``, ``maxLength``).
"""

from __future__ import annotations

from .spec import Field, Kind

#: Every kind of step, by its name in JSON (filled below, in menu order).
KINDS: dict[str, Kind] = {}


def declare(kind: Kind) -> Kind:
    KINDS[kind.name] = kind
    return kind


COLUMNS_ALL = "The columns it works on; none listed: every column."
CASES = ("upper", "lower", "title")
TESTS = (
    "equals",
    "not_equals",
    "contains",
    "starts_with",
    "ends_with",
    "is_empty",
    "is_not_empty",
    "one_of",
    "matches",
    "greater_than",
    "less_than",
    "before",
    "after",
)
DATE_HELP = (
    "Written with DD (day), MM (month), YYYY or YY (year) and the separators between them, "
    "e.g. DD/MM/YYYY, MM/DD/YYYY, DD.MM.YYYY, YYYY-MM-DD."
)

# --- columns -------------------------------------------------------------------------------

declare(Kind("keep_columns", "Keep only these columns", "Keeps the columns listed, in their order; drops the rest.", (
    Field("columns", "columns", "Columns to keep"),
)))  # fmt: skip
declare(Kind("drop_columns", "Remove columns", "Removes the columns listed.", (
    Field("columns", "columns", "Columns to remove"),
)))  # fmt: skip
declare(Kind("rename_columns", "Rename columns", "Gives columns new names.", (
    Field("names", "renames", "Old name → new name"),
)))  # fmt: skip
declare(Kind("reorder_columns", "Move columns to the front", "Puts the columns listed first, in that order; the others follow as they were.", (
    Field("columns", "columns", "Columns to put first"),
)))  # fmt: skip

# --- rows ----------------------------------------------------------------------------------

_ROWS = (
    Field("conditions", "conditions", "Conditions", help=(
        "Each: {\"column\", \"is\", \"value\" or \"values\", \"ignore_case\"}; \"is\" one of "
        + ", ".join(TESTS) + ". Numbers compare as numbers, dates (YYYY-MM-DD) as dates."
    )),
    Field("match", "choice", "Rows that meet", required=False, default="all", choices=("all", "any")),
)  # fmt: skip
declare(Kind("keep_rows", "Keep rows", "Keeps the rows that meet the conditions; the others are left out.", _ROWS))
declare(Kind("remove_rows", "Remove rows", "Leaves out the rows that meet the conditions.", _ROWS))
declare(Kind("remove_duplicates", "Remove duplicate rows", (
    "Leaves out rows whose key columns repeat an earlier row's (keep first) or a later row's (keep last), "
    "over the whole file. The rows kept stay in the file's order."
), (
    Field("columns", "columns", "Key columns", required=False, help="None listed: the whole row is the key."),
    Field("keep", "choice", "Which copy to keep", required=False, default="first", choices=("first", "last")),
), whole_file=True))  # fmt: skip

# --- cells ---------------------------------------------------------------------------------

declare(Kind("replace", "Find and replace", (
    "Replaces text in cells: a part of the cell, or only cells that are exactly the text found. "
    "Several replacements (e.g. from a two-column file) are made one after another."
), (
    Field("columns", "columns", "Columns", required=False, help=COLUMNS_ALL),
    Field("find", "text", "Find", required=False),
    Field("replace_with", "text", "Replace with", required=False, default=""),
    Field("pairs", "pairs", "Replacements", required=False, help="A list of [find, replace with] pairs."),
    Field("whole_cell", "bool", "Only whole cells", required=False, default=False),
    Field("ignore_case", "bool", "Ignore case", required=False, default=False),
)))  # fmt: skip
declare(Kind("trim", "Remove spaces at the ends", "Removes spaces, tabs and line breaks at the start and end of cells.", (
    Field("columns", "columns", "Columns", required=False, help=COLUMNS_ALL),
)))  # fmt: skip
declare(Kind("collapse_spaces", "Collapse repeated spaces", "Turns runs of spaces (and tabs, line breaks) inside cells into one space.", (
    Field("columns", "columns", "Columns", required=False, help=COLUMNS_ALL),
)))  # fmt: skip
declare(Kind("change_case", "Change case", "Writes cells in UPPER, lower or Title Case.", (
    Field("columns", "columns", "Columns", required=False, help=COLUMNS_ALL),
    Field("to", "choice", "To", choices=CASES),
)))  # fmt: skip
declare(Kind("split_column", "Split a column", (
    "Splits a column's cells at a separator into new columns (placed after it). "
    "The last new column takes the rest of the cell; missing parts are empty."
), (
    Field("column", "column", "Column"),
    Field("separator", "text", "Separator"),
    Field("into", "columns", "New columns"),
    Field("keep_original", "bool", "Keep the original column", required=False, default=False),
)))  # fmt: skip
declare(Kind("join_columns", "Join columns", "Joins columns' cells with a separator into a new column (placed after the last of them).", (
    Field("columns", "columns", "Columns to join"),
    Field("separator", "text", "Separator", required=False, default=" "),
    Field("into", "column", "New column"),
    Field("keep_originals", "bool", "Keep the joined columns", required=False, default=True),
)))  # fmt: skip
declare(Kind("fill_empty", "Fill empty cells", "Fills empty cells with a value, or with the cell above (across the whole file).", (
    Field("columns", "columns", "Columns"),
    Field("with", "choice", "Fill with", required=False, default="above", choices=("above", "value")),
    Field("value", "text", "Value", required=False, default=""),
)))  # fmt: skip
declare(Kind("format_dates", "Change date format", (
    "Rewrites dates from the format the column is in to another (ISO 8601, YYYY-MM-DD, unless told). "
    "A cell that is not a date in that format is left as it is and its row gets an error. " + DATE_HELP
), (
    Field("columns", "columns", "Columns"),
    Field("from", "text", "Written as now", required=False, default="detect",
          help="The format the dates are in, or detect (the step asks when 01/02 could be either)."),
    Field("to", "text", "Write as", required=False, default="YYYY-MM-DD"),
)))  # fmt: skip
declare(Kind("format_numbers", "Plain numbers", (
    "Rewrites numbers written with thousands separators or a decimal comma (1.234,5 or 1,234.5) as plain "
    "numbers (1234.5). A cell that is not a number is left as it is and its row gets an error."
), (
    Field("columns", "columns", "Columns"),
    Field("decimal", "choice", "Decimal mark", choices=(",", ".")),
)))  # fmt: skip
declare(Kind("lookup", "Look up columns from a reference table", (
    "Adds columns from a reference table (a completed task's result) to each row whose key matches, "
    "like Excel's VLOOKUP. A key that repeats in the reference refuses the step unless it says which "
    "to use; a lookup never adds rows. Rows without a match get an error unless told to leave them empty."
), (
    Field("reference", "text", "Reference table (a task's id)"),
    Field("on", "columns", "Key columns in this table"),
    Field("reference_on", "columns", "Key columns in the reference", required=False, help="None: the same names."),
    Field("take", "columns", "Columns to add"),
    Field("match", "choice", "Keys match", required=False, default="exactly", choices=("exactly", "ignoring case and spaces")),
    Field("repeated_keys", "choice", "A key repeated in the reference", required=False, default="refuse",
          choices=("refuse", "first", "last")),
    Field("unmatched", "choice", "Rows without a match", required=False, default="error", choices=("error", "leave empty")),
), whole_file=True))  # fmt: skip

# --- checks (Frictionless Table Schema's constraint names) --------------------------------

declare(Kind("check", "Check values", (
    "Checks a column's cells. A row that fails gets the check's words in the error column and stays in "
    "the file, so the errors workbook and the corrected rows work for it. Empty cells pass every check but "
    "required."
), (
    Field("column", "column", "Column"),
    Field("required", "bool", "Required (not empty)", required=False, default=False),
    Field("unique", "bool", "Unique over the whole file", required=False, default=False),
    Field("format", "text", "Format", required=False,
          help="email, url, phone (E.164, or phone:GB and the like), postcode:GB, postcode:US, postcode:DE, postcode:NL, iban"),
    Field("pattern", "text", "Pattern (a regular expression the whole cell matches)", required=False),
    Field("type", "choice", "Values are", required=False, default="text", choices=("text", "number", "date")),
    Field("minimum", "number", "At least", required=False),
    Field("maximum", "number", "At most", required=False),
    Field("minLength", "number", "At least this many characters", required=False),
    Field("maxLength", "number", "At most this many characters", required=False),
    Field("enum", "texts", "One of", required=False),
    Field("not_before_column", "column", "Not less than the column", required=False,
          help="e.g. an end date that must not be before the start date in the same row"),
), check=True))  # fmt: skip
