"""Built-in task types: registry entries, email_enrichment, clean, profile."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from engine import neutralised, process, read_back
from support import csv_bytes

from s3task import handlers
from s3task.errors import InvalidInput, UnknownTaskType
from s3task.handlers import ERROR_COLUMN, Param
from s3task.handlers.clean import SeenRows, normalise_headers, row_hashes
from s3task.handlers.email import find_email_column
from s3task.handlers.profile import HyperLogLog

BUILT_IN = ("clean", "copy", "email_enrichment", "profile")


def frame(columns: dict[str, list[str]]) -> pd.DataFrame:
    """A chunk as the engine hands it over: every column text."""
    return pd.DataFrame({name: pd.Series(values, dtype="str") for name, values in columns.items()})


# --- registry -----------------------------------------------------------------


def test_built_in_types_are_registered_and_described() -> None:
    types = {t.name: t for t in handlers.all_types()}
    assert set(BUILT_IN) <= set(types)
    for name in BUILT_IN:
        task_type = types[name]
        assert task_type.title and len(task_type.description) > 60, name
        assert all(isinstance(p, Param) and p.help for p in task_type.params), name
        assert task_type.validate({}) == {p.name: p.default for p in task_type.params}


def test_unknown_type_and_unknown_parameter() -> None:
    with pytest.raises(UnknownTaskType):
        handlers.get("no_such_type")
    with pytest.raises(InvalidInput, match="no parameter 'colour'"):
        handlers.get("clean").validate({"colour": "red"})


# --- email_enrichment --------------------------------------------------------------

ADDRESSES = [
    ("  Ann.Lee@Example.COM ", "ann.lee@example.com", "example.com", "false", "false", ""),
    ("info+news@gmail.com", "info+news@gmail.com", "gmail.com", "true", "true", ""),
    ("mailto:bob@acme.io", "bob@acme.io", "acme.io", "false", "false", ""),
    ("<sales@outlook.com>", "sales@outlook.com", "outlook.com", "true", "true", ""),
    ("user@xn--bcher-kva.ch", "user@xn--bcher-kva.ch", "xn--bcher-kva.ch", "false", "false", ""),
    ("Lena.Müller@GMX.de", "lena.müller@gmx.de", "gmx.de", "true", "false", ""),
    ("zoë@bücher.ch", "zoë@bücher.ch", "bücher.ch", "false", "false", ""),
    ("   ", "", "", "", "", "invalid email: missing"),
    ("", "", "", "", "", "invalid email: missing"),
    ("plainaddress", "", "", "", "", "invalid email: no @"),
    ("a@@b.com", "", "", "", "", "invalid email: more than one @"),
    ("john doe@x.com", "", "", "", "", "invalid email: contains a space"),
    ("@x.com", "", "", "", "", "invalid email: nothing before the @"),
    ("joe@", "", "", "", "", "invalid email: nothing after the @"),
    ("joe@localhost", "", "", "", "", "invalid email: the domain has no dot"),
    ("jo..e@x.com", "", "", "", "", "invalid email: a dot at the start or end of the name, or two in a row"),
    ("jo(e)@x.com", "", "", "", "", "invalid email: characters before the @ that are not allowed"),
    ("joe@-x.com", "", "", "", "", "invalid email: the domain is not valid"),
    ("joe@x.c", "", "", "", "", "invalid email: the domain is not valid"),
]


def test_email_enrichment_columns_and_errors() -> None:
    handler = handlers.get("email_enrichment")({})
    chunk = frame({"id": [str(i) for i in range(len(ADDRESSES))], "Email": [a[0] for a in ADDRESSES]})
    out = handler.process(chunk)
    assert list(out.columns) == [
        "id",
        "Email",
        "email_normalized",
        "email_domain",
        "is_free_provider",
        "is_role_account",
        ERROR_COLUMN,
    ]
    assert out["id"].tolist() == chunk["id"].tolist()  # one row per input row, in order
    assert out["Email"].tolist() == chunk["Email"].tolist()
    for (raw, *expected), (_, row) in zip(ADDRESSES, out.iterrows(), strict=True):
        assert row.iloc[2:].tolist() == expected, raw


def test_email_enrichment_end_to_end_keeps_rows_in_order() -> None:
    rows = [["name", "E-mail"], *([f"n{i}", a[0]] for i, a in enumerate(ADDRESSES * 20))]
    output, counts, _ = process(csv_bytes(rows), "email_enrichment", block_size=200)
    back = read_back(output)
    assert [r[0] for r in back[1:]] == [r[0] for r in rows[1:]]
    assert [r[1] for r in back[1:]] == [neutralised(r[1]) for r in rows[1:]]  # "@x.com" → "'@x.com"
    invalid = sum(1 for a in ADDRESSES if a[-1]) * 20
    assert (counts.row_count, counts.error_count, counts.success_count) == (
        len(rows) - 1,
        invalid,
        len(rows) - 1 - invalid,
    )


@pytest.mark.parametrize(
    ("columns", "found"),
    [
        (["id", "email"], "email"),
        (["id", "E-Mail"], "E-Mail"),
        (["Mail", "id"], "Mail"),
        (["id", "Email Address"], "Email Address"),
        (["email_address", "backup"], "email_address"),
        (["id", "work_email"], "work_email"),
        (["id", "Courriel"], "Courriel"),
        (["mail", "email"], "email"),  # the better name wins, wherever it is
    ],
)
def test_email_column_is_found_by_header(columns: list[str], found: str) -> None:
    assert find_email_column(columns, "") == found


def test_email_column_parameter() -> None:
    assert find_email_column(["id", "Contact"], "contact") == "Contact"
    with pytest.raises(InvalidInput, match="there is no column named 'addr'; columns are: 'id', 'Contact'"):
        find_email_column(["id", "Contact"], "addr")
    output, _, _ = process(b"who,contact\nx,a@b.org\n", "email_enrichment", {"email_column": "contact"})
    assert read_back(output)[1][2:] == ["a@b.org", "b.org", "false", "false", ""]


def test_no_email_column_fails_with_a_clear_message() -> None:
    with pytest.raises(InvalidInput) as raised:
        process(b"id,name\n", "email_enrichment")
    assert str(raised.value) == ("no email column found; columns are: 'id', 'name'; set the 'email column' parameter")


# --- clean --------------------------------------------------------------------


def test_normalise_headers() -> None:
    assert normalise_headers([" First  Name", "AGE", "first name", "", "Age", "age_2"]) == [
        "first_name",
        "age",
        "first_name_2",
        "column_4",
        "age_2",
        "age_2_2",
    ]


def test_clean_trims_renames_and_drops() -> None:
    rows = [
        [" Full Name ", "City", "full name"],
        ["  Ann ", " Paris", "x"],
        ["", " ", ""],
        ["Ann", "Paris", "x"],  # same as the first row once trimmed
        ["Bob", "=cmd", ""],
        ["", "", ""],
        ["Bob", "=cmd", ""],
        ["Cy", "Rome", "y"],
    ]
    output, counts, _ = process(csv_bytes(rows), "clean")
    assert read_back(output) == [
        ["full_name", "city", "full_name_2"],
        ["Ann", "Paris", "x"],
        ["Bob", "'=cmd", ""],
        ["Cy", "Rome", "y"],
    ]
    assert counts.processed_count == 7 and counts.row_count == 3  # 4 rows left out
    assert (counts.success_count, counts.error_count) == (3, 0)


def test_clean_finds_duplicates_across_blocks() -> None:
    base = [[f"row {i}", str(i % 7)] for i in range(300)]
    rows = [["a", "b"], *base, *base[::-1], *base]
    output, counts, _ = process(csv_bytes(rows), "clean", block_size=256)
    assert (counts.processed_count, counts.row_count) == (900, 300)
    assert read_back(output)[1:] == base


def test_clean_options_can_be_turned_off() -> None:
    rows = [["A B", "c"], [" x ", "1"], [" x ", "1"], ["", ""]]
    params = {"trim_spaces": False, "normalize_headers": False, "drop_empty_rows": False, "drop_duplicate_rows": False}
    output, counts, _ = process(csv_bytes(rows), "clean", params)
    assert read_back(output) == rows
    assert counts.row_count == 3


def test_clean_input_column_named_error_is_data() -> None:
    _, counts, _ = process(b"name,error\nx,boom\n", "clean")
    assert (counts.success_count, counts.error_count) == (1, 0)


def test_row_hashes_do_not_confuse_cells_with_separators() -> None:
    a = frame({"x": ["a\x1fb", "a", "\x1e"], "y": ["c", "b\x1fc", "\x1e\x1e"]})
    hi, lo = row_hashes(a)
    assert len(set(zip(hi.tolist(), lo.tolist(), strict=True))) == 3
    b = frame({"x": ["a\x1fb"], "y": ["c"]})
    assert (row_hashes(b)[0][0], row_hashes(b)[1][0]) == (hi[0], lo[0])


def test_seen_rows_merges_runs_and_stays_exact() -> None:
    seen = SeenRows()
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 2**63, size=(5000, 2), dtype=np.uint64)
    fresh_total = 0
    for start in range(0, 5000, 250):
        batch = keys[start : start + 250]
        fresh = seen.add(batch[:, 0], batch[:, 1])
        fresh_total += int(fresh.sum())
        again = seen.add(batch[:, 0], batch[:, 1])
        assert not again.any()
    assert fresh_total == len(seen) == 5000
    assert len(seen._runs) <= 13  # about log2(rows / batch) runs
    # Same high half, different low half: different rows.
    same_hi = seen.add(keys[:3, 0], keys[:3, 1] + np.uint64(1))
    assert same_hi.all()


# --- profile ---------------------------------------------------------------------


def test_profile_summarises_every_column() -> None:
    rows = [["city", "code", "note"]]
    rows += [["Paris", "007", ""]] * 3 + [["Rome", "07", "long text here"]] * 2 + [["Oslo", "7", ""], ["Bern", "", "x"]]
    output, counts, _ = process(csv_bytes(rows), "profile", block_size=40)
    back = read_back(output)
    assert back[0] == [
        "column",
        "position",
        "filled",
        "empty",
        "distinct",
        "distinct_is_estimate",
        "shortest",
        "longest",
        *(f"top_{i}_{part}" for i in range(1, 6) for part in ("value", "count")),
        "note",
    ]
    top = ["Paris", "3", "Rome", "2", "Bern", "1", "Oslo", "1", "", ""]
    assert back[1] == ["city", "1", "7", "0", "4", "false", "4", "5", *top, ""]
    top = ["007", "3", "07", "2", "7", "1", "", "", "", ""]
    assert back[2] == ["code", "2", "6", "1", "3", "false", "1", "3", *top, ""]
    top = ["long text here", "2", "x", "1", "", "", "", "", "", ""]
    assert back[3] == ["note", "3", "3", "4", "2", "false", "1", "14", *top, ""]
    assert counts.processed_count == 7 and counts.row_count == 3 and counts.error_count == 0


def test_profile_of_a_header_only_file() -> None:
    output, _, _ = process(b"a,b\n", "profile")
    assert [row[:8] for row in read_back(output)[1:]] == [
        ["a", "1", "0", "0", "0", "false", "", ""],
        ["b", "2", "0", "0", "0", "false", "", ""],
    ]


def test_profile_beyond_the_exact_limit_estimates(monkeypatch: pytest.MonkeyPatch) -> None:
    from s3task.handlers import profile

    monkeypatch.setattr(profile, "EXACT_BUDGET", 100)
    monkeypatch.setattr(profile, "MIN_EXACT", 100)
    rows = [["id", "kind"]] + [[str(i), "common" if i % 2 else f"rare{i}"] for i in range(20_000)]
    output, _, _ = process(csv_bytes(rows), "profile", block_size=20_000)
    header, id_row, kind_row = read_back(output)
    ids, kinds = dict(zip(header, id_row, strict=True)), dict(zip(header, kind_row, strict=True))
    # Every id is different: the estimate is capped at the filled cells, and says it is an estimate.
    assert 20_000 * 0.95 < int(ids["distinct"]) <= 20_000
    assert ids["distinct_is_estimate"] == "true" and "estimate" in ids["note"]
    assert kinds["top_1_value"] == "common" and kinds["distinct_is_estimate"] == "true"


def test_hyperloglog_accuracy() -> None:
    sketch = HyperLogLog()
    values = np.arange(200_000).astype(str).astype(object)
    sketch.add(pd.util.hash_array(values, categorize=False))
    sketch.add(pd.util.hash_array(values[:50_000], categorize=False))  # repeats change nothing
    assert abs(sketch.estimate() - 200_000) < 200_000 * 0.03
    small = HyperLogLog()
    small.add(pd.util.hash_array(np.array(["a", "b", "c"], dtype=object), categorize=False))
    assert small.estimate() == 3
