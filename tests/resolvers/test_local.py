"""The git and file resolvers on real repositories and files."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefect_waymark.resolvers import RefConfigError, parse_ref_config, resolve_refs
from tests._support.git_repo import git, make_repo


def test_git_ref_to_commit_sha(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "tag", "v1")
    head = {"name": "head", "kind": "git", "repo": "repo"}
    configs = [
        parse_ref_config(head),
        parse_ref_config({"name": "tag", "kind": "git", "repo": "repo", "ref": "v1"}),
        parse_ref_config({"name": "nope", "kind": "git", "repo": "repo", "ref": "no-branch"}),
        parse_ref_config({"name": "notrepo", "kind": "git", "repo": "missing"}),
    ]
    got = resolve_refs(configs, tmp_path)
    first = git(repo, "rev-parse", "HEAD")
    assert got["head"].version == first and got["tag"].version == first
    assert got["nope"].version is None and "no-branch" in str(got["nope"].error)
    assert got["notrepo"].version is None and "no folder" in str(got["notrepo"].error)
    (repo / "a.txt").write_text("two\n")
    git(repo, "commit", "-qam", "two")
    again = resolve_refs(configs[:2], tmp_path)
    assert again["head"].version == git(repo, "rev-parse", "HEAD") != first
    assert again["tag"].version == first


def test_git_ref_cannot_be_an_option() -> None:
    with pytest.raises(RefConfigError, match="ref"):
        parse_ref_config({"name": "x", "kind": "git", "ref": "--output=/tmp/x"})


def test_file_sha256_and_absent(tmp_path: Path) -> None:
    (tmp_path / "spec.md").write_text("v1")
    (tmp_path / "folder").mkdir()
    configs = [
        parse_ref_config({"name": "spec", "kind": "file", "path": "spec.md"}),
        parse_ref_config({"name": "later", "kind": "file", "path": "later.md"}),
        parse_ref_config({"name": "dir", "kind": "file", "path": "folder"}),
    ]
    got = resolve_refs(configs, tmp_path)
    import hashlib

    assert got["spec"].version == "sha256:" + hashlib.sha256(b"v1").hexdigest()
    assert got["later"].version == "absent"
    assert got["dir"].version is None and "is a folder" in str(got["dir"].error)
    (tmp_path / "later.md").write_text("")
    assert resolve_refs(configs[1:2], tmp_path)["later"].version != "absent"
