"""The http resolver against a real HTTP server on 127.0.0.1 (no mocks on the resolver path)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from prefect_waymark.resolvers import RefConfigError, parse_ref_config, resolve_refs
from prefect_waymark.resolvers.http import json_pointer
from tests._support.ref_server import RefServer, serve


@pytest.fixture
def ref_server() -> Iterator[RefServer]:
    yield from serve()


def _http(name: str, url: str, **extra: object) -> dict[str, object]:
    return {"name": name, "kind": "http", "url": url, **extra}


def test_versions_from_etag_last_modified_body_and_json_pointer(
    ref_server: RefServer, tmp_path: Path
) -> None:
    etag = ref_server.set("/order", {"id": 7, "meta": {"rev": 12, "tags": ["a"]}})
    ref_server.set("/page", b"<html/>", etag=None, last_modified="Tue, 01 Dec 2026 10:00:00 GMT")
    configs = [
        parse_ref_config(_http("by_etag", ref_server.url("/order"))),
        parse_ref_config(_http("by_rev", ref_server.url("/order"), version_from="json:/meta/rev")),
        parse_ref_config(
            _http("by_tags", ref_server.url("/order"), version_from="json:/meta/tags")
        ),
        parse_ref_config(_http("by_stamp", ref_server.url("/page"), version_from="last-modified")),
        parse_ref_config(_http("by_body", ref_server.url("/page"), version_from="body")),
    ]
    got = resolve_refs(configs, tmp_path)
    assert {n: r.error for n, r in got.items()} == dict.fromkeys(got)
    assert got["by_etag"].version == etag
    assert got["by_rev"].version == "12"
    assert got["by_tags"].version is not None and got["by_tags"].version.startswith("sha256:")
    assert got["by_stamp"].version == "Tue, 01 Dec 2026 10:00:00 GMT"
    assert got["by_body"].version is not None and got["by_body"].version.startswith("sha256:")
    assert ref_server.calls["/order"] == 3 and ref_server.calls["/page"] == 2

    ref_server.set("/order", {"id": 7, "meta": {"rev": 13, "tags": ["a"]}})
    again = resolve_refs(configs, tmp_path)
    assert again["by_etag"].version != etag
    assert again["by_rev"].version == "13"
    assert again["by_tags"].version == got["by_tags"].version  # the pointed-at value is unchanged


def test_unreadable_refs_report_errors_not_versions(ref_server: RefServer, tmp_path: Path) -> None:
    ref_server.set("/no-etag", {"a": 1}, etag=None)
    ref_server.set("/doc", {"a": 1})
    ref_server.delay = 0.0
    configs = [
        parse_ref_config(_http("missing", ref_server.url("/gone"))),
        parse_ref_config(_http("no_etag", ref_server.url("/no-etag"))),
        parse_ref_config(_http("bad_pointer", ref_server.url("/doc"), version_from="json:/b")),
        parse_ref_config(_http("refused", "http://127.0.0.1:9/x", timeout_seconds=2)),
    ]
    got = resolve_refs(configs, tmp_path)
    assert all(r.version is None for r in got.values())
    assert "HTTP 404" in str(got["missing"].error)
    assert "no ETag header" in str(got["no_etag"].error)
    assert "no key 'b'" in str(got["bad_pointer"].error)
    assert "ConnectError" in str(got["refused"].error)


def test_timeout_is_an_error(tmp_path: Path) -> None:
    slow = RefServer(delay_seconds=1.5).start()
    try:
        slow.set("/slow", {"a": 1})
        cfg = parse_ref_config(_http("slow", slow.url("/slow"), timeout_seconds=0.2))
        got = resolve_refs([cfg], tmp_path)["slow"]
        assert got.version is None and "no answer within 0.2 s" in str(got.error)
    finally:
        slow.stop()


def test_credentials_are_sent_and_never_echoed_in_errors(
    ref_server: RefServer, tmp_path: Path
) -> None:
    token = "tok-very-secret-123"
    ref_server.set("/private", {"a": 1})
    ref_server.auth["/private"] = f"Bearer {token}"
    good = parse_ref_config(_http("good", ref_server.url("/private"), secret=SecretStr(token)))
    basic = parse_ref_config(
        _http(
            "basic",
            ref_server.url("/private"),
            secret=SecretStr(token),
            auth="basic",
            username="ann",
        )
    )
    # A credential in the URL's query string must not be echoed either.
    wrong = parse_ref_config(
        _http("wrong", ref_server.url(f"/nothing?key={token}"), secret=SecretStr(token))
    )
    got = resolve_refs([good, basic, wrong], tmp_path)
    assert got["good"].ok and got["good"].version
    assert "HTTP 401" in str(got["basic"].error)  # sent as basic auth, the server wants bearer
    assert "HTTP 404" in str(got["wrong"].error)
    assert f"Bearer {token}" in ref_server.seen_auth["/private"]
    for r in got.values():
        assert token not in repr(r)
    assert token not in repr(good) and token not in good.model_dump_json()


def test_one_async_client_reads_all_refs_of_a_decision(
    ref_server: RefServer, tmp_path: Path
) -> None:
    for i in range(30):
        ref_server.set(f"/r{i}", {"i": i})
    configs = [parse_ref_config(_http(f"r{i}", ref_server.url(f"/r{i}"))) for i in range(30)]
    got = resolve_refs(configs, tmp_path)
    assert len(got) == 30 and all(r.ok for r in got.values())
    assert sum(ref_server.calls.values()) == 30


@pytest.mark.parametrize(
    ("fields", "where", "expected"),
    [
        ({"url": "ftp://host/x"}, ("url",), "expected an http:// or https:// URL"),
        ({"version_from": "header"}, ("version_from",), "expected etag, last-modified"),
        ({"auth": "bearer"}, (), "needs a credential"),
        ({"timeout_seconds": 0}, ("timeout_seconds",), "above 0, at most 600"),
        ({"verb": "POST"}, ("verb",), "unknown field 'verb'"),
    ],
)
def test_bad_fields_name_the_field(
    fields: dict[str, object], where: tuple[str, ...], expected: str
) -> None:
    with pytest.raises(RefConfigError) as err:
        parse_ref_config({"name": "x", "kind": "http", "url": "http://h/x", **fields})
    locs = [loc for loc, _ in err.value.problems]
    assert where in locs
    assert expected in str(err.value)


def test_json_pointer_follows_rfc6901() -> None:
    doc = {"a/b": {"m~n": [10, 20]}, "": 1}
    assert json_pointer(doc, "/a~1b/m~0n/1") == 20
    assert json_pointer(doc, "") == doc
