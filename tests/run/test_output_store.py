"""The output store restores only what it should: never outside the workdir, never by raising on
a file-system problem, and a storage that cannot be read is tried once, then named."""

from __future__ import annotations

import hashlib
from pathlib import Path

from prefect.filesystems import LocalFileSystem, RemoteFileSystem

from prefect_waymark.results.outputs import OutputStore, output_key


def _stored(tmp_path: Path, content: bytes) -> tuple[OutputStore, str]:
    store = OutputStore(LocalFileSystem(basepath=str(tmp_path / "storage")))
    work = tmp_path / "src"
    work.mkdir(exist_ok=True)
    (work / "a.txt").write_bytes(content)
    sha = hashlib.sha256(content).hexdigest()
    assert store.put(work, {"a.txt": sha}).stored == ["a.txt"]
    assert (tmp_path / "storage" / output_key(sha)).read_bytes() == content
    return store, sha


def test_restore_checks_the_hash_and_stays_inside_the_workdir(tmp_path: Path) -> None:
    store, sha = _stored(tmp_path, b"rows: 3\n")
    work = tmp_path / "work"
    work.mkdir()
    assert (
        store.restore(work, "out/a.txt", sha) and (work / "out/a.txt").read_bytes() == b"rows: 3\n"
    )
    assert not store.restore(work, "b.txt", "0" * 64)  # not stored: no file, no error
    assert not (work / "b.txt").exists() and store.unreachable is None
    assert not store.restore(work, "../escaped.txt", sha)
    assert not (tmp_path / "escaped.txt").exists()
    (tmp_path / "elsewhere").mkdir()
    (work / "link").symlink_to(tmp_path / "elsewhere")
    assert not store.restore(work, "link/a.txt", sha)
    assert not (tmp_path / "elsewhere" / "a.txt").exists()
    (work / "blocker").write_text("a file where a folder should be")
    assert not store.restore(work, "blocker/a.txt", sha)  # no FileExistsError


def test_a_changed_file_is_not_stored_under_its_old_hash(tmp_path: Path) -> None:
    store = OutputStore(LocalFileSystem(basepath=str(tmp_path / "storage")))
    (tmp_path / "a.txt").write_bytes(b"new")
    assert store.put(tmp_path, {"a.txt": hashlib.sha256(b"old").hexdigest()}).stored == []


def test_an_unreachable_storage_is_tried_once_and_named(tmp_path: Path) -> None:
    # A real HTTP file system on a port nothing listens on (fsspec's http implementation).
    store = OutputStore(RemoteFileSystem(basepath="http://127.0.0.1:9/storage"))
    assert not store.restore(tmp_path, "a.txt", "1" * 64)
    assert store.unreachable is not None
    first = store.unreachable
    assert not store.restore(tmp_path, "b.txt", "2" * 64) and store.unreachable == first
