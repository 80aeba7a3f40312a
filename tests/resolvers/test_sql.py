"""The sql resolver on real SQLite and PostgreSQL databases."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from prefect_waymark.resolvers import RefConfigError, parse_ref_config, resolve_refs
from prefect_waymark.resolvers.sql import _engine_url


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'biz.db'}"
    url: str = request.getfixturevalue("pg_url")
    return url


def _seed(url: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE orders (id VARCHAR(20) PRIMARY KEY, rev INTEGER)"))
        conn.execute(sa.text("INSERT INTO orders VALUES ('o-1', 3), ('o-2', 9)"))
    engine.dispose()


def _set_rev(url: str, key: str, rev: int) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE orders SET rev = :r WHERE id = :k"), {"r": rev, "k": key})
    engine.dispose()


def test_row_version_query_and_absent_row(db_url: str, tmp_path: Path) -> None:
    _seed(db_url)
    row = {"name": "o1", "kind": "sql", "url": db_url, "table": "orders"}
    configs = [
        parse_ref_config({**row, "key_column": "id", "key": "o-1", "version_column": "rev"}),
        parse_ref_config(
            {**row, "key_column": "id", "key": "o-9", "version_column": "rev"}
        ).model_copy(update={"name": "missing"}),
        parse_ref_config(
            {
                "name": "total",
                "kind": "sql",
                "url": db_url,
                "query": "SELECT SUM(rev) FROM orders WHERE id <> :skip",
                "params": {"skip": "nobody"},
            }
        ),
    ]
    got = resolve_refs(configs, tmp_path)
    assert got["o1"].version == "3"
    assert got["missing"].version == "absent"
    assert got["total"].version == "12"
    _set_rev(db_url, "o-1", 4)
    again = resolve_refs(configs, tmp_path)
    assert again["o1"].version == "4" and again["total"].version == "13"


def test_missing_table_is_an_error(db_url: str, tmp_path: Path) -> None:
    _seed(db_url)
    cfg = parse_ref_config(
        {
            "name": "x",
            "kind": "sql",
            "url": db_url,
            "table": "nope",
            "key_column": "id",
            "key": "1",
            "version_column": "rev",
        }
    )
    got = resolve_refs([cfg], tmp_path)["x"]
    assert got.version is None and "nope" in str(got.error)


def test_relative_sqlite_path_is_inside_the_workdir(tmp_path: Path) -> None:
    _seed(f"sqlite:///{tmp_path / 'biz.db'}")
    cfg = parse_ref_config(
        {
            "name": "q",
            "kind": "sql",
            "url": "sqlite:///biz.db",
            "query": "SELECT rev FROM orders WHERE id = 'o-2'",
        }
    )
    assert resolve_refs([cfg], tmp_path)["q"].version == "9"
    missing = parse_ref_config(
        {"name": "q", "kind": "sql", "url": "sqlite:///other.db", "query": "SELECT 1"}
    )
    got = resolve_refs([missing], tmp_path)["q"]
    assert "no SQLite database" in str(got.error)
    assert not (tmp_path / "other.db").exists()  # reading never creates a database


def test_password_from_secret_reaches_postgres_and_not_errors(pg_url: str, tmp_path: Path) -> None:
    import psycopg

    admin = pg_url.replace("postgresql+psycopg", "postgresql")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS waymark_ref_reader")
        conn.execute("CREATE ROLE waymark_ref_reader LOGIN PASSWORD 'pw-sekrit-42'")
    base = pg_url.replace("postgres@", "waymark_ref_reader@")
    cfg = parse_ref_config(
        {"name": "one", "kind": "sql", "url": base, "query": "SELECT 1", "secret": "pw-sekrit-42"}
    )
    got = resolve_refs([cfg], tmp_path)["one"]
    # Trust auth accepts any password here, so check the URL the engine gets carries it.
    assert got.version == "1", got.error
    assert _engine_url(cfg, tmp_path, "pw-sekrit-42").password == "pw-sekrit-42"
    bad = cfg.model_copy(update={"query": "SELECT * FROM no_such_table"})
    err = resolve_refs([bad], tmp_path)["one"]
    assert err.error and "pw-sekrit-42" not in err.error
    assert "pw-sekrit-42" not in cfg.describe()


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"query": "SELECT 1", "table": "t"}, "not both (table given)"),
        ({"table": "t", "key_column": "id"}, "missing: key, version_column"),
        (
            {"table": "t; DROP TABLE x", "key_column": "id", "key": 1, "version_column": "v"},
            "plain SQL identifier",
        ),
        ({"url": "not a url", "query": "SELECT 1"}, "expected a SQLAlchemy URL"),
    ],
)
def test_bad_fields(fields: dict[str, object], expected: str) -> None:
    data = {"name": "x", "kind": "sql", "url": "sqlite:///x.db", **fields}
    with pytest.raises(RefConfigError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        parse_ref_config(data)
