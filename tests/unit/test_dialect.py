"""Files from the tools people use: their delimiter and text encoding detected, read, and carried to the worker.

The files are made as the tools make them: Excel's plain "CSV" in much of Europe (semicolons,
Windows-1252, CRLF), its "Unicode text" (UTF-16 LE with a byte-order mark, tabs), "CSV UTF-8"
(a byte-order mark, commas) and a pipe-separated export. Each is detected from its first bytes,
read by the preview's reader (``read_start``) and processed by the engine the worker runs
(``processing.run``) with the detected format, the output being the same values in UTF-8 with
commas, the progress counting the file's own bytes. The same files through the app and a real
worker: tests/system/test_app.py.
"""

from __future__ import annotations

import io
import random
import typing

import pandas as pd
import pytest
from dialects import FILES, ROWS, excel

from s3task import csvio
from s3task.csvio import DELIMITERS, ENCODINGS, CsvReader, InputFormat, detect, read_start
from s3task.errors import InvalidInput
from s3task.layout import Layout
from s3task.processing import run
from s3task.progress import Progress
from s3task.tasks import Actor, TaskService
from s3task.testing import MemoryStore
from s3task.web.models import InputFormat as InputFormatModel


class Source:
    """Only ``read(n)``, in short random pieces (a network body): characters get cut between reads."""

    def __init__(self, data: bytes, max_piece: int = 7, seed: int = 0) -> None:
        self._data, self._pos, self._max = data, 0, max_piece
        self._random = random.Random(seed)

    def read(self, n: int = -1) -> bytes:
        n = min(n if n >= 0 else len(self._data), self._random.randint(1, self._max))
        piece = self._data[self._pos : self._pos + n]
        self._pos += len(piece)
        return piece


class Sink:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: bytes | memoryview) -> None:
        self.parts.append(bytes(data))


def process(
    data: bytes, read_as: InputFormat, block_size: int = 16, max_piece: int = 7
) -> tuple[bytes, Progress, list[Progress]]:
    sink, seen = Sink(), []
    source = Source(data, max_piece)
    counts = run("copy", {}, source, sink, seen.append, block_size=block_size, input_format=read_as)
    return b"".join(sink.parts), counts, seen


def output_rows(output: bytes) -> list[list[str]]:
    text = output.decode("utf-8")  # the output is UTF-8 whatever the input was
    frame = pd.read_csv(io.StringIO(text.removeprefix("\ufeff")), dtype=str, keep_default_na=False)
    return [list(frame.columns), *frame.to_numpy().tolist()]


@pytest.mark.parametrize("name", FILES)
def test_each_tool_s_file_is_detected_previewed_and_processed(name: str) -> None:
    data, expected = FILES[name]
    assert detect(data, whole=True) == expected
    assert detect(data[:40], whole=False) == expected  # the first bytes are enough

    start = read_start(data, whole=True, input_format=expected)
    assert start is not None
    names, table = start
    assert [names, *[list(row.values()) for row in table.to_pylist()]] == ROWS

    output, counts, progress = process(data, expected)
    assert output_rows(output) == ROWS
    header = output.removeprefix(csvio.BOM).split(b"\r\n")[0]
    assert header.replace(b'"', b"") == "Name,Straße,Betrag".encode()  # commas, UTF-8
    # Progress counts the file's own bytes: it only grows, and ends at the file's size.
    done = [p.bytes_processed for p in progress]
    assert done == sorted(done) and done[-1] == counts.bytes_processed == len(data)
    assert counts.processed_count == len(ROWS) - 1


def test_the_excel_europe_file_is_windows_1252_with_crlf() -> None:
    data = FILES["excel csv, europe"][0]
    assert b"M\xfcller;Hauptstra\xdfe 5;\x80 1.234,50\r\n" in data  # ü, ß and € as Windows-1252 writes them
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")


def test_progress_is_exact_in_input_bytes_for_every_block_size() -> None:
    """UTF-16 counts two bytes a character (four beyond U+FFFF), Windows-1252 one: the percentage stays exact."""
    rows = [["id", "text"], *([str(i), f"Grüße 😀 € {i}"] for i in range(200))]
    for encoding, codec in (("utf-16-le", "utf-16-le"), ("windows-1252", "cp1252")):
        text = excel(rows, "\t") if encoding.startswith("utf-16") else excel(rows, ";")
        if codec == "cp1252":
            text = text.replace("😀", ":)")
        data = ("\ufeff" + text).encode(codec) if codec != "cp1252" else text.encode(codec)
        read_as = detect(data)
        for block_size in (1, 9, 100, 4096):
            reader = CsvReader(Source(data, seed=block_size), block_size, read_as)
            ends = [end for _table, end in reader.tables()]
            assert ends == sorted(ends) and ends[-1] == len(data), (encoding, block_size)
            # Each block ends where the bytes of its rows end: re-reading the file up to there gives those rows.
            for end in ends:
                assert data[:end].decode(codec).endswith("\r\n")


def test_a_wrong_guess_is_overridden_and_the_engine_reads_the_choice() -> None:
    """One column of remarks with commas inside: the guess is two columns; the user says tabs (so: one column)."""
    data = b"Remarks, internal\nGood, thanks\nLate, again\n"
    assert detect(data, whole=True) == InputFormat(",", "utf-8")
    chosen = InputFormat("\t", "utf-8")
    start = read_start(data, whole=True, input_format=chosen)
    assert start is not None and start[0] == ["Remarks, internal"]
    output, _, _ = process(data, chosen)
    assert output_rows(output) == [["Remarks, internal"], ["Good, thanks"], ["Late, again"]]


def test_an_unclosed_quote_names_the_line_where_it_opened_and_the_cause() -> None:
    data = excel(ROWS, ";").encode("cp1252") + b'4;"never closed;1\r\n5;x;2\r\n'
    read_as = detect(data)
    with pytest.raises(InvalidInput) as raised:
        process(data, read_as)
    message = str(raised.value)
    assert message.startswith("row 5 (Name 4): a quote opened in `Straße` on line 5 is never closed")
    assert "the rest of the file would be read as that one value" in message
    # The preview's reader says the same, for the whole file.
    with pytest.raises(InvalidInput, match="on line 5 is never closed"):
        read_start(data, whole=True, input_format=read_as)


def test_a_semicolon_file_s_ragged_row_speaks_of_semicolons() -> None:
    data = b"a;b\n1;2\n3\n"
    with pytest.raises(InvalidInput) as raised:
        process(data, InputFormat(";"))
    # Too few values: the hint is about the short row, not about quoting a semicolon (issue 23.5).
    assert "row 3 (a 3): 1 value where the header has 2 columns — the row is short" in str(raised.value)
    assert "nothing between two semicolons" in str(raised.value)
    with pytest.raises(
        InvalidInput, match="3 values where the header has 2 columns — a value that contains a semicolon"
    ):
        process(b"a;b\n1;2\n3;4;5\n", InputFormat(";"))


def test_quotes_follow_the_delimiter() -> None:
    """With semicolons, a quote after a comma is a literal quote in an unquoted value (as Arrow reads it)."""
    data = b'item;size\nmonitor,"27 wide";1\n"tv;big";"55"" screen"\n'
    output, _, _ = process(data, InputFormat(";"), block_size=4)
    assert output_rows(output) == [["item", "size"], ['monitor,"27 wide"', "1"], ["tv;big", '55" screen']]


def test_text_that_is_not_in_the_chosen_encoding_names_its_line() -> None:
    data = "a\tb\r\n1\t2\r\n".encode("utf-16-le") + b"\x00\xdc" + "\t3\r\n".encode("utf-16-le")
    with pytest.raises(InvalidInput, match="line 3: not UTF-16 text — choose the file's text encoding again"):
        process(data, InputFormat("\t", "utf-16-le"))
    with pytest.raises(InvalidInput, match="ends in the middle of a character"):
        process("a\tb\r\n1\t2\r\n".encode("utf-16-le")[:-1], InputFormat("\t", "utf-16-le"))
    # Windows-1252 reads every byte, also the five the codec leaves undefined (as browsers do).
    output, _, _ = process(b"a;b\r\n\x81;\x9d\r\n", InputFormat(";", "windows-1252"))
    assert output_rows(output) == [["a", "b"], ["\x81", "\x9d"]]
    # A Windows file read as UTF-8 says where, and what to choose.
    with pytest.raises(InvalidInput) as raised:
        process(FILES["excel csv, europe"][0], InputFormat(";", "utf-8"))
    assert "line 1: not UTF-8 text" in str(raised.value) and "Windows (Western European)" in str(raised.value)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"a,b,c\n1,2,3\n", InputFormat(",", "utf-8")),
        (b"a;b;c\n1,5;2,5;3\n", InputFormat(";", "utf-8")),  # decimal commas do not fool it
        (b"a\tb\n1\t2\n", InputFormat("\t", "utf-8")),
        (b"a|b\n1|2\n", InputFormat("|", "utf-8")),
        (b'a,b\n"x;y;z",2\n', InputFormat(",", "utf-8")),  # semicolons inside quoted values
        (b"just one column\nvalue\n", InputFormat(",", "utf-8")),
        (b"Name\nSmith, John\nDoe, Jane\n", InputFormat(";", "utf-8")),  # one column: commas would split it
        (b"Name;City\nJos\xe9;M\xfcnchen\n", InputFormat(";", "windows-1252")),
        ("a\tb\n1\t2\n".encode("utf-16-le"), InputFormat("\t", "utf-16-le")),  # no BOM: by its zero bytes
        (b"a,b\n\x00\x01\x02\n", InputFormat(",", "utf-8")),  # binary: left to the reader to refuse
    ],
)
def test_detection(data: bytes, expected: InputFormat) -> None:
    assert detect(data, whole=True) == expected


def test_a_character_cut_by_the_end_of_the_first_bytes_does_not_change_the_guess() -> None:
    data = ("Name;Ort\n" + "Zoë;Köln\n" * 5000).encode("utf-8")
    for cut in range(60, 80):
        assert detect(data[:cut], whole=False) == InputFormat(";", "utf-8"), cut
        head = data[:cut]
        assert read_start(head, whole=False, input_format=InputFormat(";")) is not None


def test_the_described_format_is_plain_words() -> None:
    assert InputFormat(";", "windows-1252").describe() == "Separated by semicolons · Windows (Western European) text"
    assert InputFormat("\t", "utf-16-le").describe() == "Separated by tabs · UTF-16 text (Excel “Unicode text”)"


def test_formats_are_checked_where_they_are_accepted() -> None:
    assert csvio.parse_input_format({"delimiter": "semicolon", "encoding": "cp1252"}) == {
        "delimiter": ";",
        "encoding": "windows-1252",
    }
    assert csvio.parse_input_format(None) == {"delimiter": ",", "encoding": "utf-8"}
    for bad, says in (
        ({"delimiter": ":"}, "delimiter must be one of"),
        ({"encoding": "ebcdic"}, "encoding must be one of"),
        ({"quote": "'"}, "no setting 'quote'"),
        ({"delimiter": 1}, "must be text"),
        ({"delimiter": "detect"}, "must be one of"),  # only where detection is allowed
    ):
        with pytest.raises(InvalidInput, match=says):
            csvio.parse_input_format(bad)
    # The API's request model offers exactly the values the reader knows.
    fields = InputFormatModel.model_fields
    assert set(typing.get_args(fields["delimiter"].annotation)) == {*DELIMITERS, "detect"}
    assert set(typing.get_args(fields["encoding"].annotation)) == {*ENCODINGS, "detect", "utf-16"}


def test_the_task_carries_its_format_and_detect_is_settled_when_it_is_submitted() -> None:
    service = TaskService(MemoryStore("dialect"), Layout())
    ann = Actor("ann")
    data = FILES["excel csv, europe"][0]
    detected = service.submit_file(ann, "eu", "copy", None, data, {"delimiter": "detect", "encoding": "detect"})
    assert detected.input_format == InputFormat(";", "windows-1252")
    chosen = service.submit_file(ann, "chosen", "copy", None, b"a;b\n1;2\n", {"delimiter": "|"})
    assert chosen.input_format == InputFormat("|", "utf-8")
    plain = service.submit_file(ann, "plain", "copy", None, b"a,b\n1,2\n")
    assert plain.input_format == InputFormat(",", "utf-8")  # as before: comma, UTF-8
    with pytest.raises(InvalidInput, match="delimiter must be one of"):
        service.create(ann, "bad", "copy", None, {"delimiter": "x"})
    # What the header shows in the chosen format is checked at submit, in the worker's words.
    with pytest.raises(InvalidInput, match="the uploaded file cannot be processed: line 1: not UTF-8 text"):
        service.submit_file(ann, "wrong", "copy", None, data, {"delimiter": ";", "encoding": "utf-8"})


def test_the_api_takes_the_input_format_and_names_it_when_it_is_wrong() -> None:
    from s3task.web.api import NEW_TASK_MESSAGES, checked
    from s3task.web.errors import HttpError
    from s3task.web.models import NewTask

    body = checked(
        NewTask,
        {"name": "eu", "type": "copy", "input_format": {"delimiter": "\t", "encoding": "detect"}},
        NEW_TASK_MESSAGES,
    )
    assert body.input_format is not None
    assert body.input_format.model_dump() == {"delimiter": "\t", "encoding": "detect"}
    for wrong in ({"delimiter": ":"}, {"encoding": "latin-2"}, {"quote": "'"}, "semicolon"):
        with pytest.raises(HttpError) as raised:
            checked(NewTask, {"name": "eu", "type": "copy", "input_format": wrong}, NEW_TASK_MESSAGES)
        assert (raised.value.status, raised.value.message) == (400, NEW_TASK_MESSAGES["input_format"]), wrong


def test_submit_detects_unless_told_and_says_how_it_will_read_the_file(tmp_path, capsys, monkeypatch) -> None:
    from s3task import cli
    from s3task.records import read_record
    from s3task.store import open_store

    monkeypatch.delenv("S3TASK_STORE", raising=False)
    store_dir = tmp_path / "store"
    path = tmp_path / "export.csv"
    path.write_bytes(FILES["excel csv, europe"][0])
    assert cli.main(["--store", str(store_dir), "submit", str(path), "--name", "eu"]) == 0
    detected = capsys.readouterr()
    assert "read as: Separated by semicolons · Windows (Western European) text" in detected.err
    store, layout = open_store(str(store_dir))
    record = read_record(store, layout, detected.out.strip())[0]
    assert record.input_format == InputFormat(";", "windows-1252")
    told = ["submit", str(path), "--name", "told", "--delimiter", "tab", "--encoding", "cp1252"]
    assert cli.main(["--store", str(store_dir), *told]) == 0
    assert "read as: Separated by tabs · Windows (Western European) text" in capsys.readouterr().err
    assert cli.main(["--store", str(store_dir), "submit", str(path), "--name", "x", "--delimiter", ":"]) == 1
    assert "the input format's delimiter must be one of" in capsys.readouterr().err


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "cp1252"])
def test_the_corpus_reads_the_same_in_every_encoding(codec: str) -> None:
    """Every readable file of the bad-input corpus (block boundaries, quoted line breaks, 5 MB cells, stray
    quotes, a BOM inside), transcoded: the same rows as the UTF-8 original, progress ending at the file's size."""
    from badinput import corpus

    encoding = {"utf-16-le": "utf-16-le", "utf-16-be": "utf-16-be", "cp1252": "windows-1252"}[codec]
    checked = 0
    for case in corpus():
        if case.error is not None:
            continue
        text = case.data.decode("utf-8-sig")
        try:
            data = (("\ufeff" if codec.startswith("utf-16") else "") + text).encode(codec)
        except UnicodeEncodeError:
            continue  # a character Windows-1252 does not have
        block = case.block_size or 1 << 20
        piece = 7 if len(data) < 100_000 else 1 << 16  # short reads cut characters; big files in bigger pieces
        original, _, _ = process(case.data, InputFormat(), block_size=block, max_piece=piece)
        output, counts, _ = process(data, InputFormat(",", encoding), block_size=block, max_piece=piece)
        assert output == original, case.name
        assert counts.bytes_processed == len(data), case.name
        checked += 1
    assert checked >= 15


def test_reading_ahead_is_bounded_while_transcoding() -> None:
    """Memory stays flat: the engine never holds more than a few blocks of the file it has not yet counted."""
    block = 64 * 1024
    data = "\ufeff" + excel([["id", "text"], *([str(i), "Grüße aus Köln € " * 3] for i in range(60_000))], "\t")
    raw = data.encode("utf-16-le")

    class Counting(Source):
        position = 0

        def read(self, n: int = -1) -> bytes:
            piece = super().read(n)
            self.position += len(piece)
            return piece

    source = Counting(raw, max_piece=1 << 30)
    ahead: list[int] = []
    run(
        "copy",
        {},
        source,
        Sink(),
        lambda p: ahead.append(source.position - p.bytes_processed),
        block_size=block,
        input_format=InputFormat("\t", "utf-16-le"),
    )
    assert len(raw) > 100 * block
    assert max(ahead) <= 8 * block, max(ahead)


@pytest.mark.parametrize("delimiter", [b";", b"\t", b"|"])
def test_row_boundaries_follow_the_delimiter_as_the_exact_scan_does(delimiter: bytes) -> None:
    """The numpy fast path (quote parity when every quote sits next to the delimiter) == Arrow's rules one by one."""
    rnd = random.Random(3)
    for _ in range(10_000):
        buf = bytes(rnd.choices(b'",\n\ra' + delimiter, k=rnd.randint(0, 16)))
        exact_end, exact_open = csvio.scan_exact(buf, b"\n", delimiter=delimiter)
        assert csvio.find_boundary(buf, b"\n", delimiter) == exact_end, buf
        assert csvio.open_quote_at_end(buf, b"\n", delimiter) == exact_open, buf


@pytest.mark.parametrize("read_as", [InputFormat(";", "windows-1252"), InputFormat("\t", "utf-16-le")])
def test_junk_in_any_format_never_crashes(read_as: InputFormat) -> None:
    """Random bytes end in output covering every byte or in InvalidInput (with a sentence), never another error."""
    rnd = random.Random(6)
    pieces = [b";", b"\t", b",", b'"', b"\n", b"\r", b"a", b"\xc3\xa9", b"\xff", b"\x00", b"\x00\xdc", b"\xff\xfe"]
    outcomes = {"ok": 0, "invalid": 0}
    for _ in range(300):
        data = b"".join(rnd.choices(pieces, k=rnd.randint(0, 50)))
        try:
            _, counts, _ = process(data, read_as, block_size=rnd.choice([1, 7, 4096]))
        except InvalidInput as e:
            assert "could not be read as CSV" not in str(e) and len(str(e)) >= len("the file is empty"), data
            outcomes["invalid"] += 1
        else:
            assert counts.bytes_processed == len(data), data
            outcomes["ok"] += 1
    assert outcomes["ok"] > 10 and outcomes["invalid"] > 10, outcomes


def test_a_quoted_comma_in_a_semicolon_file_does_not_make_it_comma_separated() -> None:
    """Commas split both lines in two as well, but only by cutting through quoted values."""
    data = b'Name;"Street, No"\r\nAnn;"Main St, 5"\r\n'
    found = detect(data, whole=True)
    assert found == InputFormat(";", "utf-8")
    start = read_start(data, whole=True, input_format=found)
    assert start is not None
    names, rows = start
    assert names == ["Name", "Street, No"]
    assert rows.to_pylist() == [{"Name": "Ann", "Street, No": "Main St, 5"}]
    # A comma file with the same shape stays a comma file.
    assert detect(b'Name,"Street; No"\r\nAnn,"Main St; 5"\r\n', whole=True).delimiter == ","


def test_an_encoding_the_file_contradicts_is_refused_and_utf_16_follows_the_byte_order_mark() -> None:
    service = TaskService(MemoryStore("dialect"), Layout())
    ann = Actor("ann")
    text = "Name\tCity\r\nAnn\tKöln\r\n"
    little = ("\ufeff" + text).encode("utf-16-le")
    big = ("\ufeff" + text).encode("utf-16-be")
    utf8_bom = ("\ufeff" + text).encode("utf-8")
    western = text.encode("cp1252")
    refused = (
        (little, "utf-16-be", "starts with a UTF-16 little-endian byte-order mark"),
        (big, "utf-16-le", "starts with a UTF-16 big-endian byte-order mark"),
        (little, "utf-8", "starts with a UTF-16 little-endian byte-order mark"),
        (utf8_bom, "windows-1252", "starts with a UTF-8 byte-order mark"),
        (western, "utf-16-le", "has no byte-order mark and, .* it is not UTF-16"),
        (western, "utf-16-be", "has no byte-order mark and, .* it is not UTF-16"),
    )
    for data, encoding, says in refused:
        with pytest.raises(InvalidInput, match=f"the uploaded file cannot be processed: the file {says}"):
            service.submit_file(ann, "wrong", "copy", None, data, {"delimiter": "detect", "encoding": encoding})
        if encoding != "utf-8":  # the New task page's preview, read with the chosen encoding
            with pytest.raises(InvalidInput, match=f"the file {says}"):
                read_start(data, whole=True, input_format=InputFormat("\t", encoding))
    # "utf-16", the name most tools use, means the byte order the mark shows.
    for data, settled in ((little, "utf-16-le"), (big, "utf-16-be")):
        record = service.submit_file(ann, "u16", "copy", None, data, {"delimiter": "detect", "encoding": "UTF-16"})
        assert record.input_format == InputFormat("\t", settled)
    for data in (text.encode("utf-16-le"), utf8_bom):
        with pytest.raises(InvalidInput, match=r"does not start with a UTF-16 byte-order mark.*utf-16-le or utf-16-be"):
            service.submit_file(ann, "no mark", "copy", None, data, {"encoding": "utf-16"})
    # A file that agrees with its choice is read as before.
    assert service.submit_file(ann, "ok", "copy", None, little, {"encoding": "utf-16-le", "delimiter": "tab"})
    assert service.submit_file(ann, "ok", "copy", None, text.encode("utf-16-le"), {"encoding": "utf-16-le"})
