#!/usr/bin/env bash
# The package as someone installs it: builds the wheel from this checkout,
# checks what it holds, installs it into an empty virtualenv (its dependencies
# from the package index) and, from a directory outside the checkout, runs the
# three commands and one task end to end on a local store. Any failure stops it
# with a non-zero exit. Run by .ci/run; on its own: bash scripts/check-wheel.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
PY=${PYTHON:-python3}
builder=$PY
[ -x .venv/bin/python ] && builder=.venv/bin/python
start=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/s3task-check-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT

step() { printf '== check-wheel: %s (%ds)\n' "$*" $((SECONDS - start)) >&2; }
fail() {
  printf 'check-wheel: FAILED: %s\n' "$*" >&2
  exit 1
}

step "building the wheel"
# setuptools builds in ./build and never empties it: a module deleted since the
# last build would ride along into this wheel. Start from nothing, leave nothing.
rm -rf build
"$builder" -m pip wheel --quiet --no-deps --wheel-dir "$work/dist" .
rm -rf build
wheels=("$work"/dist/s3task-*.whl)
[ ${#wheels[@]} -eq 1 ] && [ -f "${wheels[0]}" ] || fail "expected one s3task wheel in $work/dist"
wheel=${wheels[0]}
echo "built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) kB)" >&2

step "checking its contents"
# Every file of the package (not only .py: a template or a .js file the code
# reads at runtime would be missing from the install), the three commands, the
# runtime dependencies; and nothing else at the top level (no tests, bench, ui,
# pages, app.py or worker.py).
"$PY" - "$wheel" "$root" <<'PYEOF' || fail "the wheel's contents (above)"
import re
import sys
import tomllib
import zipfile
from pathlib import Path

wheel, root = Path(sys.argv[1]), Path(sys.argv[2])
names = zipfile.ZipFile(wheel).namelist()
problems = []

source = {
    p.relative_to(root).as_posix()
    for p in (root / "s3task").rglob("*")
    if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
}
missing = sorted(source - set(names))
if missing:
    problems.append(f"package files missing from the wheel (list them under [tool.setuptools.package-data] "
                    f"in pyproject.toml): {missing}")

dist_info = [n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")]
tops = {n.split("/")[0] for n in names} - set(dist_info)
if tops != {"s3task"}:
    problems.append(f"the wheel should hold only s3task/ and its .dist-info, it holds: {sorted(tops)}")

info = dist_info[0] if dist_info else "?"
entry_points = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode() if dist_info else ""
for script in ("s3task = s3task.cli:main", "s3task-worker = s3task.worker.cli:main",
               "s3task-api = s3task.web.cli:main"):
    if script not in entry_points:
        problems.append(f"console script missing: {script}")

def requirement(text: str) -> tuple[str, frozenset[str]]:
    """'pandas<4,>=2.2' and 'pandas>=2.2,<4' alike: the name and the set of its specifiers."""
    match = re.match(r"\s*([A-Za-z0-9._-]+(?:\[[^\]]*\])?)(.*)", text)
    assert match, text
    return match[1].lower(), frozenset(s.strip() for s in match[2].split(",") if s.strip())


metadata = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode() if dist_info else ""
declared = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
requires = {requirement(line.removeprefix("Requires-Dist: ")) for line in metadata.splitlines()
            if line.startswith("Requires-Dist: ")}
for dep in declared:
    if requirement(dep) not in requires:
        problems.append(f"dependency missing from the wheel's metadata: {dep}")

if problems:
    sys.exit("\n".join(problems))
print(f"{len(names)} files, {len(source)} from s3task/, {len(requires)} dependencies", file=sys.stderr)
PYEOF

step "installing it into an empty virtualenv"
# Not even pip in it: the builder's pip installs into it (--python), a third faster
# than bootstrapping the venv's own. pip's output goes to a log, shown on failure.
"$PY" -m venv --without-pip "$work/venv"
"$builder" -m pip --python "$work/venv/bin/python" install "$wheel" >"$work/pip.log" 2>&1 ||
  fail "pip install of the wheel: $(tail -n 30 "$work/pip.log")"
bin=$work/venv/bin

step "running it from outside the checkout"
mkdir "$work/run"
cd "$work/run"
# Nothing from the caller's environment or the checkout: the installed package only.
unset PYTHONPATH PYTHONHOME
while IFS= read -r var; do unset "$var"; done < <(compgen -e | grep '^S3TASK_' || true)
"$bin/python" - "$root" <<'PYEOF' || fail "the installed package (above)"
import importlib.metadata
import importlib.util
import sys
from pathlib import Path

import s3task

root = Path(sys.argv[1]).resolve()
where = Path(s3task.__file__).resolve()
if root in where.parents:
    sys.exit(f"s3task was imported from the checkout ({where}), not from the installed wheel")
if importlib.metadata.version("s3task") != s3task.__version__:
    sys.exit(f"version mismatch: metadata {importlib.metadata.version('s3task')} != {s3task.__version__}")
for tool in ("pytest", "moto", "playwright", "ruff"):
    if importlib.util.find_spec(tool) is not None:
        sys.exit(f"{tool} is installed: the package's runtime should not pull it in")
print(f"s3task {s3task.__version__} from {where.parent}", file=sys.stderr)
PYEOF

for cmd in s3task s3task-worker s3task-api; do
  out=$("$bin/$cmd" --help) || fail "$cmd --help exited with $?"
  grep -q '^usage: ' <<<"$out" || fail "$cmd --help printed no usage line: $out"
done
out=$("$bin/s3task-worker" --help)
grep -q '^usage: s3task-worker ' <<<"$out" || fail "s3task-worker --help does not name itself: $out"

printf 'name,email\nAda Lovelace,ada@example.com\nAlan Turing,"alan@example.com"\n"Hopper, Grace",grace@example.com\n' >data.csv
task_id=$("$bin/s3task" --store store submit data.csv --name "wheel check" --type copy)
[ -n "$task_id" ] || fail "submit printed no task id"
"$bin/s3task-worker" --store store --once --poll-interval 0.2 2>worker.log ||
  fail "s3task-worker --once exited with $?: $(cat worker.log)"
"$bin/s3task" --store store show "$task_id" --json >show.json
"$bin/s3task" --store store download "$task_id" -o out.csv >/dev/null
# The Excel copy needs xlsxwriter, a runtime dependency: made from the output on this first request.
"$bin/s3task" --store store download "$task_id" --excel -o out.xlsx >/dev/null || fail "the Excel copy failed"
"$bin/python" - <<'PYEOF' || fail "the task did not round-trip (worker log: $(cat worker.log))"
import csv
import json
import sys

record = json.load(open("show.json"))
if record.get("status") != "completed":
    sys.exit(f"task is {record.get('status')!r}, not completed: {record}")
rows_in = list(csv.reader(open("data.csv", newline="", encoding="utf-8")))
raw = open("out.csv", "rb").read()
if not raw.startswith(b"\xef\xbb\xbf"):
    sys.exit("the output has no UTF-8 byte-order mark (Windows Excel would misread it)")
rows_out = list(csv.reader(open("out.csv", newline="", encoding="utf-8-sig")))
# copy writes every row unchanged.
if rows_out != rows_in:
    sys.exit(f"output rows differ from the input:\n{rows_in}\n{rows_out}")
if not open("out.xlsx", "rb").read(4) == b"PK\x03\x04":
    sys.exit("the Excel copy is not a workbook (an .xlsx is a zip file)")
print(f"task {record['task_id']} completed, {len(rows_out) - 1} rows back", file=sys.stderr)
PYEOF

step "passed"
