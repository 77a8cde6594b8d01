"""``open_store`` picks a backend by the URL's scheme; harnesses wrap every store a process opens."""

from __future__ import annotations

from pathlib import Path

import pytest

import s3task.store as store_mod
from s3task.layout import Layout
from s3task.store import open_store, register_backend, wrap_stores
from s3task.store.local import LocalStore


def test_a_path_or_file_url_is_the_local_directory(tmp_path: Path) -> None:
    for url in (str(tmp_path / "a"), f"file://{tmp_path / 'b'}"):
        store, layout = open_store(url)
        assert isinstance(store, LocalStore) and layout == Layout()


def test_an_unknown_scheme_is_refused_with_the_known_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    builtin = {k: v for k, v in store_mod._BACKENDS.items() if k in ("file", "s3")}  # not memory:// of s3task.testing
    monkeypatch.setattr(store_mod, "_BACKENDS", builtin)
    with pytest.raises(ValueError, match=r"unsupported store URL 'gs://b/p' \(use file://, s3:// or a local path\)"):
        open_store("gs://b/p")


def test_a_new_backend_is_one_registration_and_wrappers_see_every_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_mod, "_BACKENDS", dict(store_mod._BACKENDS))
    monkeypatch.setattr(store_mod, "_WRAPPERS", [])
    register_backend("mem", lambda url, clock: (LocalStore(tmp_path / url.removeprefix("mem://")), Layout("x")))
    seen: list[object] = []
    wrap_stores(lambda s: seen.append(s) or s)
    store, layout = open_store("mem://here")
    assert isinstance(store, LocalStore) and store.root == tmp_path / "here" and layout.prefix == "x"
    open_store(str(tmp_path / "plain"))
    assert len(seen) == 2
