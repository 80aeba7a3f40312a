"""Raw secrets in a ref's plain fields are refused, named by field path and never echoed; a
version read from a response that echoes the credential is recorded without it.

The response cases read a real HTTP server on 127.0.0.1 (tests/_support/ref_server.py).
"""

from __future__ import annotations

import base64
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from prefect_waymark import Plan, PlanError
from prefect_waymark.resolvers import (
    RefConfigError,
    ResolveContext,
    SecretRefConfig,
    parse_ref_config,
    ref_field_problems,
    resolve_refs,
)
from prefect_waymark.resolvers._raw_secrets import is_secret_name
from tests._support.helpers import run_cli
from tests._support.ref_server import RefServer, serve

SECRET = "s3cr3t-Zq81"


@pytest.fixture
def ref_server() -> Iterator[RefServer]:
    yield from serve()


REFUSED = [
    ("http", {"url": f"https://ann:{SECRET}@api.example.com/x"}, ("url",), "holds a password"),
    ("http", {"url": f"https://{SECRET}@github.com/x"}, ("url",), "holds user info"),
    ("http", {"url": f"https://h/x?token={SECRET}"}, ("url",), "parameter 'token'"),
    ("http", {"url": f"https://h/x?a=1&api_key={SECRET}"}, ("url",), "parameter 'api_key'"),
    ("http", {"url": f"https://h/x?password={SECRET}"}, ("url",), "parameter 'password'"),
    ("http", {"url": f"https://h/x?client_secret={SECRET}"}, ("url",), "'client_secret'"),
    ("http", {"url": f"https://h/x?X-Amz-Signature={SECRET}"}, ("url",), "'X-Amz-Signature'"),
    ("http", {"url": f"https://h/cb#access_token={SECRET}"}, ("url",), "'access_token'"),
    (
        "http",
        {"url": "https://h/x", "headers": {"Authorization": f"Bearer {SECRET}"}},
        ("headers", "Authorization"),
        "use auth: bearer",
    ),
    (
        "http",
        {"url": "https://h/x", "headers": {"proxy-authorization": f"Basic {SECRET}"}},
        ("headers", "proxy-authorization"),
        "header_name: proxy-authorization",
    ),
    (
        "http",
        {"url": "https://h/x", "headers": {"X-Api-Key": SECRET}},
        ("headers", "X-Api-Key"),
        "auth: header with header_name: X-Api-Key",
    ),
    (
        "http",
        {"url": "https://h/x", "headers": {"Cookie": f"session={SECRET}"}},
        ("headers", "Cookie"),
        "holds a credential",
    ),
    (
        "http",
        {"url": "https://h/x", "headers": {"X-Auth-Token": SECRET}},
        ("headers", "X-Auth-Token"),
        "holds a credential",
    ),
    (
        "sql",
        {"url": f"postgresql+psycopg://app:{SECRET}@db/erp", "query": "SELECT 1"},
        ("url",),
        "keep user@host in the URL",
    ),
    (  # SQLAlchemy reads a password holding '/' where urlsplit sees none
        "sql",
        {"url": f"postgresql+psycopg://app:a/{SECRET}@db/erp", "query": "SELECT 1"},
        ("url",),
        "holds a password",
    ),
    (
        "sql",
        {"url": f"postgresql+psycopg://app@db/erp?password={SECRET}", "query": "SELECT 1"},
        ("url",),
        "parameter 'password'",
    ),
    # A malformed URL would be quoted by the kind's own check: the secret is masked first.
    ("http", {"url": f"ftp://u:{SECRET}@h/x"}, ("url",), "holds a password"),
    ("sql", {"url": f"notaurl://u:{SECRET}@", "query": "SELECT 1"}, ("url",), "password"),
    # An unknown kind still gets its secret refused.
    ("htp", {"url": f"https://u:{SECRET}@h/x"}, ("url",), "holds a password"),
]


@pytest.mark.parametrize(("kind", "fields", "loc", "expected"), REFUSED)
def test_raw_secrets_are_refused_by_field_never_echoed(
    kind: str, fields: dict[str, object], loc: tuple[str, ...], expected: str
) -> None:
    problems = ref_field_problems({"name": "r", "kind": kind, **fields})
    secret_problems = [(p, m) for p, m in problems if "raw secret is refused" in m]
    assert [p for p, _ in secret_problems] == [loc], problems
    assert expected in secret_problems[0][1]
    assert "secret_block: NAME" in secret_problems[0][1]
    for _, message in problems:  # neither the secret nor any later message quoting the value
        assert SECRET not in message
    with pytest.raises(RefConfigError) as err:
        parse_ref_config({"name": "r", "kind": kind, **fields})
    assert SECRET not in str(err.value)


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "http", "url": "https://api.example.com/x?page=2&pageToken=abc&key=orders"},
        {"kind": "http", "url": "https://h/x?token=&password="},  # empty: no secret
        {"kind": "http", "url": "http://h:8080/users/ann@example.com"},  # '@' in the path
        {"kind": "http", "url": "https://h/x", "headers": {"Accept": "json", "If-Match": "x"}},
        {"kind": "http", "url": "https://h/x", "headers": {"Idempotency-Key": "k-1"}},
        {"kind": "sql", "url": "postgresql+psycopg://app@db/erp", "query": "SELECT 1"},
        {"kind": "sql", "url": "sqlite:///data.db", "query": "SELECT 1"},
        {"kind": "http", "url": "https://h/x", "secret_block": "api-token"},
    ],
)
def test_urls_and_headers_without_a_secret_pass(fields: dict[str, object]) -> None:
    assert ref_field_problems({"name": "r", **fields}) == []


def test_secret_names() -> None:
    for name in ("token", "access_token", "API-KEY", "apiKey", "X-Vault-Token", "sig", "pwd"):
        assert is_secret_name(name), name
    for name in ("page", "pageToken", "next_page_token", "key", "author", "id", "Accept"):
        assert not is_secret_name(name), name


def test_a_plan_file_with_raw_secrets_exits_2_naming_file_line_and_field(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        textwrap.dedent(
            f"""\
            plan_id: raw-secrets
            state_refs:
              - name: api
                kind: http
                url: "https://api.example.com/orders/7?token={SECRET}"
                headers:
                  Authorization: "Bearer {SECRET}"
              - {{name: db, kind: sql, url: "postgresql+psycopg://app:{SECRET}@db/erp", query: x}}
            steps:
              - {{id: a, run: "echo ran > ran.txt", reads: [api, db]}}
            """
        )
    )
    for command in ("validate", "run"):
        proc = run_cli(command, str(plan), cwd=tmp_path)
        assert proc.returncode == 2, (proc.stdout, proc.stderr)
        err = proc.stderr
        assert f"{plan}:5: state_refs[0].url: the URL's parameter 'token'" in err
        assert f"{plan}:7: state_refs[0].headers.Authorization: the header" in err
        assert f"{plan}:8: state_refs[1].url: the URL holds a password" in err
        assert "Traceback" not in err
        assert SECRET not in proc.stdout + proc.stderr
    assert not (tmp_path / ".waymark").exists()  # nothing was recorded
    assert not (tmp_path / "ran.txt").exists()


def test_a_python_plan_with_a_raw_secret_is_refused() -> None:
    with pytest.raises(PlanError) as err:
        Plan(
            "py-secrets",
            state_refs=[{"name": "api", "kind": "http", "url": f"https://u:{SECRET}@h/x"}],
        ).add_step(id="a", run="true", reads=["api"]).build()
    assert "state_refs[0].url: the URL holds a password" in str(err.value)
    assert SECRET not in str(err.value)


def test_block_fields_refuse_raw_secrets_but_credentials_pass() -> None:
    from prefect_waymark.blocks import StateRefItem, StateRefsBlock, StateRefsBlockError

    block = StateRefsBlock(
        refs=[
            StateRefItem(name="a", kind="http", locator=f"https://u:{SECRET}@h/x"),
            StateRefItem(
                name="b",
                kind="http",
                locator="https://h/x",
                options={"headers": {"X-Api-Key": SECRET}},
            ),
            StateRefItem(name="c", kind="http", locator="https://h/x", options={"secret": SECRET}),
            StateRefItem(name="d", kind="http", locator=f"https://h/x?api_key={SECRET}"),
        ],
        credentials={"api": SECRET},
    )
    with pytest.raises(StateRefsBlockError) as err:
        block.ref_configs(label="state_refs (block 'prod')")
    text = str(err.value)
    assert "state_refs (block 'prod').refs[0].locator: the URL holds a password" in text
    assert "refs[1].options.headers.X-Api-Key: the header 'X-Api-Key' holds a credential" in text
    assert "refs[2].options.secret: a raw secret is refused" in text
    assert "refs[3].locator: the URL's parameter 'api_key'" in text
    assert "credential: NAME" in text
    assert SECRET not in text
    ok = StateRefsBlock(
        refs=[
            StateRefItem(
                name="a",
                kind="http",
                locator="https://h/x",
                options={"auth": "header", "header_name": "X-Api-Key"},
                credential="api",
            )
        ],
        credentials={"api": SECRET},
    )
    (config,) = ok.ref_configs()
    assert isinstance(config, SecretRefConfig) and config.secret is not None
    assert config.secret.get_secret_value() == SECRET
    assert SECRET not in repr(config)


def test_versions_never_carry_the_credential(ref_server: RefServer, tmp_path: Path) -> None:
    token = "tok-echoed-7781"
    other = "pw-other-5523"
    basic = base64.b64encode(f"ann:{other}".encode()).decode()
    # A server that echoes what it was sent: in the body, in the ETag, encoded, as basic auth.
    ref_server.set("/whoami", {"token": token, "rev": 3, "note": f"key {token}!"})
    ref_server.set("/etag", {"a": 1}, etag=f'"v1-{token}"')
    ref_server.set("/encoded", {"q": "a%2Fb " + base64.b64encode(token.encode()).decode()})
    ref_server.set("/basic", {"auth": f"Basic {basic}"})
    ref_server.auth["/whoami"] = f"Bearer {token}"
    ref_server.auth["/basic"] = f"Basic {basic}"

    def http(name: str, path: str, how: str, secret: str, **extra: object) -> object:
        return parse_ref_config(
            {
                "name": name,
                "kind": "http",
                "url": ref_server.url(path),
                "version_from": how,
                "secret": SecretStr(secret),
                **extra,
            }
        )

    configs = [
        http("whole", "/whoami", "json:/token", token),
        http("inside", "/whoami", "json:/note", token),
        http("rev", "/whoami", "json:/rev", token),
        http("etag", "/etag", "etag", token),
        http("encoded", "/encoded", "json:/q", token),
        http("basic", "/basic", "json:/auth", other, auth="basic", username="ann"),
    ]
    got = resolve_refs(configs, tmp_path)  # type: ignore[arg-type]
    assert {n: r.error for n, r in got.items()} == dict.fromkeys(got)
    assert got["whole"].version == "***"
    assert got["inside"].version == "key ***!"
    assert got["rev"].version == "3"  # a version without the secret is left alone
    assert got["etag"].version == '"v1-***"'
    assert got["encoded"].version == "a%2Fb ***"
    assert got["basic"].version == "Basic ***"
    for reading in got.values():
        for value in (token, other, basic, base64.b64encode(token.encode()).decode()):
            assert value not in repr(reading)
    # Change detection still works on the part that is not the secret.
    ref_server.set("/whoami", {"token": token, "rev": 3, "note": f"key {token}?"})
    again = resolve_refs(configs, tmp_path)  # type: ignore[arg-type]
    assert again["inside"].version == "key ***?" and again["whole"].version == "***"


def test_scrub_covers_a_secret_learned_after_another_ref_was_read() -> None:
    ctx = ResolveContext(Path("."))
    ctx.remember_secret("late-secret-42")
    from prefect_waymark.resolvers import RefReading

    reading = RefReading("r", "http", "v late-secret-42", None, "now", 0.0)
    assert ctx.scrub_reading(reading).version == "v ***"
    short = ResolveContext(Path("."))
    assert short.scrub_reading(reading) is reading  # no secret known: unchanged
