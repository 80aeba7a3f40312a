"""The SQL ledger: SQLite (WAL, the embedded default) or PostgreSQL through psycopg 3, one path.

Every statement is written once (:mod:`.sql`) and runs on the driver's own connection for both
back-ends (:mod:`.connection`): on SQLite the ledger's pragmas on each new connection,
``BEGIN IMMEDIATE`` for every write transaction (concurrent writers queue for the lock instead of
failing mid-way), a deferred ``BEGIN`` for reads (one snapshot, writers go on).

:class:`SqlLedger` reads and writes the events, the steps' projection, the branches' holds and
the receipts of irreversible actions (a receipt row's life: :mod:`.receipts`), top to bottom:
opening, the connection layer, writes, reads, receipts, the rebuild. A plan's rename, its close
and its history read out and written in are topics of their own, each a mixin with its
statements: :mod:`.plan_rename`, :mod:`.plan_close`, :mod:`.plan_archive`.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import prefect_waymark.ledger.sql as sql

from ..errors import (
    BranchBusyError,
    LedgerError,
    LedgerNotFound,
    LedgerUnavailable,
    ReceiptConflictError,
)
from ..models import utcnow
from .base import Hold, Ledger, event_kind, this_host
from .connection import Database, DbConnection
from .events import RELEASE_EVENT_KINDS, STEP_EVENT_KINDS, EventKind, ProgressEvent
from .lock_wait import LOCK_WAIT_ENV, lock_wait_seconds
from .migrations import migrate, new_ledger_meta
from .plan_archive import PlanArchive
from .plan_close import GUARDED_KINDS, PlanCloses, refuse_if_stopped
from .plan_rename import PlanRenames, refuse_if_renamed
from .receipts import MAX_RESULT_CHARS, ActionClaim, ReceiptRecord
from .schema import (
    LEDGER_ID_KEY,
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    check_schema_version,
    event_from_row,
    event_values,
    kind_names,
    schema_version_of,
)
from .step_state import (
    StepState,
    apply_event,
    check_status_transition,
    folded_json,
    new_state_fields,
    row_fields,
    states_by_step,
)
from .urls import check_ledger_url, ledger_target, shown_url

__all__ = ["SqlLedger"]


#: At most this many run ids in one ``run_id IN (...)`` (SQLite and PostgreSQL cap the
#: parameters of a statement): :meth:`SqlLedger.events` reads a longer list in parts.
_IDS_PER_READ = 500


def _intent(
    key: str, step: tuple[str, str, str], run_id: str, by: str | None, **fields: Any
) -> ReceiptRecord:
    """A new ``intent`` record of the action ``step`` = (plan_id, step_id, action)."""
    plan_id, step_id, action = step
    return ReceiptRecord(
        key=key,
        plan_id=plan_id,
        step_id=step_id,
        action=action,
        state="intent",
        run_id=run_id,
        intent_by=by,
        **fields,
    )


def _update_values(rec: ReceiptRecord) -> dict[str, Any]:
    """The parameters of ``UPDATE_RECEIPT`` for ``rec``'s row (its key is the row's)."""
    values = rec.row_values()
    values["p_key"] = values.pop("key")
    return values


def _keep_result(result: Any) -> Any:
    try:
        text = json.dumps(result, sort_keys=True)
    except (TypeError, ValueError):
        return None
    return result if len(text) <= MAX_RESULT_CHARS else None


@dataclass(frozen=True)
class _OpenFile:
    """A SQLite ledger's file as it was opened: its identity, and which of it and its WAL
    files could be written then."""

    path: Path
    identity: tuple[int, int]
    writable: tuple[Path, ...]


def _writable(file: Path) -> bool:
    return os.access(file, os.W_OK)  # False for a missing file, too


class SqlLedger(PlanRenames, PlanCloses, PlanArchive, Ledger):
    """A :class:`Ledger` on a SQLite file or a PostgreSQL database."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = check_ledger_url(url)  # a malformed or in-memory URL: LedgerUrlError
        self._target = ledger_target(url)
        self._sqlite = self._target.backend == "sqlite"
        self._db: Database | None = None
        self._local = threading.local()  # this thread is inside one of our transactions
        self._pid = os.getpid()
        self._file: _OpenFile | None = None  # SQLite: the file opened
        if self._sqlite:
            self._check_sqlite_file(self._target.path, create)
        try:
            self._db = Database(self._target)
        except ImportError as exc:  # psycopg missing
            raise LedgerError(f"cannot open the ledger {self._safe_url()}: {exc}") from exc
        try:
            self._prepare(create)
            self._file = self._file_identity()
        except self._db.errors.database as exc:  # "file is not a database", a lost server, …
            self.close()
            raise LedgerError(f"cannot open the ledger {self._safe_url()}: {exc}") from exc
        except BaseException:
            self.close()
            raise

    @property
    def _database(self) -> Database:
        assert self._db is not None
        return self._db

    @property
    def database_error(self) -> type[Exception]:
        """The driver's class of every error its database reports (``sqlite3.DatabaseError``,
        ``psycopg.DatabaseError``)."""
        return self._database.errors.database

    @staticmethod
    def _check_sqlite_file(path: Path | None, create: bool) -> None:
        if path is None:
            return
        if create:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LedgerError(f"cannot create the ledger folder {path.parent}: {exc}") from exc
            if path.parent.exists() and not os.access(path.parent, os.W_OK):
                raise LedgerError(f"cannot write the ledger at {path}: folder not writable")
        elif not path.exists():
            raise LedgerNotFound(f"no ledger at {path}")

    def _file_identity(self) -> _OpenFile | None:
        path = self._target.path
        if path is None:
            return None
        st = path.stat()
        files = (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"))
        return _OpenFile(path, (st.st_dev, st.st_ino), tuple(f for f in files if _writable(f)))

    def _check_file(self) -> None:
        """Before a read or write on SQLite: the ledger's file is still the one this ledger
        opened, and what could be written then still can. A file deleted while open takes
        writes without a word (to a file no one will read again); one made read-only under
        SQLite's shared memory (``chattr +i``) ends the process with SIGBUS at its next read:
        both are refused here (a change between this check and the read itself is not)."""
        if self._file is None:
            return
        found = self._file
        try:
            st = found.path.stat()
        except FileNotFoundError:
            raise LedgerUnavailable(
                f"cannot use the ledger {self.url}: its file was deleted while it was open "
                "(what was recorded in it is gone with it)"
            ) from None
        if (st.st_dev, st.st_ino) != found.identity:
            raise LedgerUnavailable(
                f"cannot use the ledger {self.url}: its file was replaced by another while it "
                "was open"
            )
        for file in found.writable:  # a WAL file gone with the last connection comes back
            if not _writable(file) and file.exists():
                raise LedgerUnavailable(
                    f"cannot write the ledger {self.url}: {file} is read-only now (its "
                    "permissions, `chattr +i` or a read-only mount)"
                )

    def _unavailable(self, reason: str) -> LedgerUnavailable:
        """The error for a write SQLite or PostgreSQL refused (``reason``: the driver's)."""
        low = reason.lower()
        if "database is locked" in low:
            reason = (
                f"another process held its write lock for more than {lock_wait_seconds():g} s "
                f"(${LOCK_WAIT_ENV})"
            )
        elif "disk is full" in low or "no space left" in low:
            reason = f"the disk is full ({reason})"
        return LedgerUnavailable(f"cannot write the ledger {self._safe_url()}: {reason}")

    def _safe_url(self) -> str:
        if self._sqlite:
            return self.url  # a file URL: no password to hide
        return shown_url(self.url)

    def _prepare(self, create: bool) -> None:
        # Only an opener that may create (a run) takes the write lock, locks the version row
        # and migrates: one that reads or records a decision works with the schema as it is,
        # so a read-only role or a standby can still read it.
        db = self._database
        with self._held():
            if not create:
                with db.transaction(write=False) as conn:
                    if not self._has_meta(conn):
                        raise LedgerNotFound(f"no ledger tables in {self._safe_url()}")
                    self._prepare_rows(conn, create)
                return
            with db.transaction(write=True) as conn:
                if not self._has_meta(conn):  # a new ledger: every table, index, trigger
                    if conn.backend == "postgresql":  # concurrent creators queue here
                        conn.execute_raw("SELECT pg_advisory_xact_lock(7305146285716531200)")
                    for statement in sql.create_statements(db.backend):
                        conn.execute_raw(statement)
                self._prepare_rows(conn, create)

    def _has_meta(self, conn: DbConnection) -> bool:
        if conn.backend == "sqlite":
            q = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"
        else:  # the tables of the connection's search path
            q = "SELECT 1 WHERE to_regclass(CAST(:name AS text)) IS NOT NULL"
        return conn.execute(q, {"name": sql.META}).first() is not None

    def _prepare_rows(self, conn: DbConnection, create: bool) -> None:
        """The schema version (written for a new ledger, migrated for an old one when
        ``create``) and the ledger's identity."""
        found = self._version(conn, lock=create)
        if found is None:
            if not create:
                raise LedgerNotFound(f"no ledger in {self._safe_url()} (no schema version)")
            for key, value in new_ledger_meta().items():  # a concurrent creator may be first
                conn.execute(sql.INSERT_META_IGNORING, {"key": key, "value": value})
            found = self._version(conn, lock=True)
            assert found is not None
        check_schema_version(found, self._safe_url())
        if found < SCHEMA_VERSION and create:
            migrate(conn, found, self._safe_url())  # LedgerError: rolled back, unchanged
        row = conn.execute(sql.META_VALUE, {"p_key": LEDGER_ID_KEY}).first()
        self.ledger_id = str(row.value) if row is not None else None

    def _version(self, conn: DbConnection, *, lock: bool) -> int | None:
        """The stored schema version; with ``lock``, its row locked until the transaction ends
        (PostgreSQL; SQLite holds the write lock already): concurrent migrations queue here."""
        q = sql.META_VALUE + (sql.FOR_UPDATE if lock and conn.backend != "sqlite" else "")
        row = conn.execute(q, {"p_key": SCHEMA_VERSION_KEY}).first()
        return None if row is None else schema_version_of(row.value, self._safe_url())

    # -- the connection layer ----------------------------------------------------------------
    @contextmanager
    def _held(self) -> Iterator[None]:
        """This thread is inside one of the ledger's reads or transactions until the block ends.
        A read or write begun inside another on the same thread would wait for itself (SQLite's
        write lock, a PostgreSQL row lock) or not see what the outer one wrote: refused."""
        if self._pid != os.getpid():  # a forked child: its own threads, none inside ours
            self._local = threading.local()
            self._pid = os.getpid()
        if getattr(self._local, "busy", False):
            raise LedgerError(
                f"the ledger {self._safe_url()} was used again from inside one of its own "
                "transactions (a nested read or write on the same thread): not supported"
            )
        self._local.busy = True
        try:
            yield
        finally:
            self._local.busy = False

    @contextmanager
    def _read(self, *, snapshot: bool = False) -> Iterator[DbConnection]:
        """A connection for reads. Its reads are one transaction (on SQLite one snapshot; on
        PostgreSQL's default READ COMMITTED each read sees what was committed before it):
        ``snapshot`` says a caller relies on that."""
        self._check_file()
        with self._held(), self._database.transaction(write=False) as conn:
            yield conn

    @contextmanager
    def _write(self, *, durable: bool = False) -> Iterator[DbConnection]:
        """One write transaction (SQLite: ``BEGIN IMMEDIATE``), committed when the block ends,
        rolled back if anything raises. ``durable``: its commit is on disk when it returns
        (:meth:`.Database.transaction`)."""
        self._check_file()
        db = self._database
        try:
            with self._held(), db.transaction(write=True, durable=durable) as conn:
                yield conn
        except db.errors.operational as exc:  # locked, read-only, a full disk, a lost server, …
            raise self._unavailable(str(exc)) from exc

    # -- writes --------------------------------------------------------------------------
    def append(self, event: ProgressEvent, *, lease_seconds: float = 60.0) -> ProgressEvent:
        if type(event.kind) is not EventKind:  # built without validation (model_construct)
            event = event.model_copy(update={"kind": event_kind(event.kind)})
        with self._write() as conn:
            return self._append(conn, event, lease_seconds)

    def _append(self, conn: DbConnection, ev: ProgressEvent, lease_seconds: float) -> ProgressEvent:
        fields: dict[str, Any] | None = None
        new_row = False
        key = {"p_plan": ev.plan_id, "p_step": ev.step_id}
        if ev.kind in STEP_EVENT_KINDS:
            if ev.step_id is None:
                raise LedgerError(f"a {ev.kind} event needs a step_id")
            if ev.kind == EventKind.step_started:
                self._take_hold(conn, ev, lease_seconds)
            fields, new_row = self._step_fields(conn, ev, key)
            status = fields["status"] if fields is not None else None
            check_status_transition(status, ev)
            if ev.kind in RELEASE_EVENT_KINDS or (
                ev.kind in (EventKind.step_needs_review, EventKind.step_blocked)
                and status == "in_progress"
            ):
                self._release_hold(conn, ev, fields["branch"] if fields is not None else None)
        if ev.kind in GUARDED_KINDS:
            # Last, after the hold, the step row and (for an intent) the receipt row: on
            # PostgreSQL a rename's or a close's table locks have ordered us after it by now.
            refuse_if_stopped(conn, ev.plan_id, ev.kind)
        values = event_values(ev)
        seq = conn.execute(sql.INSERT_EVENT, values).scalar_one()
        stored = ev.model_copy(update={"seq": seq})
        if ev.kind in STEP_EVENT_KINDS:  # folded from the event as stored: what a rebuild gives
            assert ev.step_id is not None
            if fields is None:
                fields = new_state_fields(ev.step_id)
            state = folded_json(fields, ev, values["at"], values["data"])
            row = {"last_seq": seq, "state": state}
            new = {"plan_id": ev.plan_id, "step_id": ev.step_id, **row} if new_row else None
            if new is None or conn.execute(sql.INSERT_STEP_IGNORING, new).rowcount != 1:
                conn.execute(sql.UPDATE_STEP, {**key, **row})
        return stored

    @staticmethod
    def _step_fields(
        conn: DbConnection, ev: ProgressEvent, key: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, bool]:
        """The step's fields as its projection row holds them (``None``: no row or an empty
        one), and whether the row is to be inserted. On SQLite the transaction holds the
        database's write lock, so a new step's row is inserted with its state at the end; on
        PostgreSQL an empty placeholder row is inserted now, to be locked."""
        sqlite = conn.backend == "sqlite"
        locked = sql.STEP_STATE if sqlite else sql.STEP_STATE + sql.FOR_UPDATE
        row = conn.execute(locked, key).first()
        if row is None and sqlite:
            return None, True
        if row is None:
            # A step's first event inserts an empty projection row first, so that SELECT
            # ... FOR UPDATE has a row to lock: a concurrent first event for the same step
            # then waits instead of failing on the primary key (PostgreSQL).
            placeholder = {"plan_id": ev.plan_id, "step_id": ev.step_id, "last_seq": 0}
            claim = sql.INSERT_STEP_IGNORING
            claimed = conn.execute(claim, {**placeholder, "state": ""}).rowcount == 1
            # Our own placeholder (locked by this transaction until it ends) is empty; only
            # when a concurrent first event inserted it first is there a state to re-read.
            row = None if claimed else conn.execute(locked, key).first()
        return row_fields(row.state if row else None, ev.step_id or ""), False

    def _take_hold(self, conn: DbConnection, ev: ProgressEvent, lease_seconds: float) -> None:
        branch = ev.branch or "main"
        values = {
            "plan_id": ev.plan_id,
            "branch": branch,
            "step_id": ev.step_id,
            "run_id": ev.run_id or "",
            "host": str(ev.data.get("host") or this_host()),
            "pid": int(ev.data.get("pid") or os.getpid()),
            "since": ev.at.isoformat(),
            "lease_until": time.time() + lease_seconds,
        }
        # ON CONFLICT DO NOTHING: the (plan_id, branch) primary key still decides who holds the
        # slot; a loser gets no row back instead of an error that would abort a PostgreSQL
        # transaction.
        taken = conn.execute(sql.TAKE_HOLD, values).first() is not None
        if not taken:
            holder = conn.execute(sql.HOLDER, {"p_plan": ev.plan_id, "p_branch": branch}).first()
            raise BranchBusyError(
                ev.plan_id,
                branch,
                holder.step_id if holder else "?",
                holder.run_id if holder else "?",
            )

    def _release_hold(
        self, conn: DbConnection, ev: ProgressEvent, state_branch: str | None
    ) -> None:
        branch = ev.branch or state_branch or "main"
        owner = ev.data.get("dead_run") if ev.kind == EventKind.step_interrupted else ev.run_id
        deleted = conn.execute(
            sql.RELEASE_HOLD,
            {"p_plan": ev.plan_id, "p_branch": branch, "p_step": ev.step_id, "p_run": owner or ""},
        ).rowcount
        if deleted != 1:
            raise LedgerError(
                f"step {ev.step_id!r} of plan {ev.plan_id!r}: branch {branch!r} is not held by run "
                f"{owner}; another run took it over (its lease ran out?)"
            )

    def renew(self, run_id: str, lease_seconds: float) -> int:
        with self._write() as conn:
            params = {"p_run": run_id, "lease_until": time.time() + lease_seconds}
            return int(conn.execute(sql.RENEW, params).rowcount)

    # -- reads ---------------------------------------------------------------------------
    def events(
        self,
        plan_id: str,
        *,
        after_seq: int = 0,
        kinds: Iterable[EventKind | str] | None = None,
        first: int | None = None,
        last: int | None = None,
        run_ids: Iterable[str] | None = None,
    ) -> list[ProgressEvent]:
        if first is not None and last is not None:
            raise ValueError("events(): give first or last, not both")
        params: dict[str, Any] = {"p_plan": plan_id, "p_after": after_seq}
        q = sql.PLAN_EVENTS + " AND seq > :p_after"
        if kinds is not None:  # by the (plan_id, kind, seq) index
            q += " AND " + sql.in_list("kind", "k", kind_names(kinds), params)
        if last is not None:  # the newest first, then put in order
            order = f" ORDER BY seq DESC LIMIT {max(int(last), 0)}"
        else:
            order = " ORDER BY seq" + (f" LIMIT {max(int(first), 0)}" if first is not None else "")
        with self._read() as conn:
            if run_ids is None:
                rows = conn.execute(q + order, params).all()
            else:  # by the (plan_id, run_id, seq) index; a long list in parts
                ids = list(dict.fromkeys(run_ids))
                rows = []
                for at in range(0, len(ids), _IDS_PER_READ):
                    part = dict(params)
                    where = sql.in_list("run_id", "r", ids[at : at + _IDS_PER_READ], part)
                    rows += conn.execute(f"{q} AND {where}{order}", part).all()
        if run_ids is not None or last is not None:
            rows.sort(key=lambda r: r.seq)
        if run_ids is not None:  # each part's first (last) ones hold the first (last) of all
            if first is not None:
                rows = rows[: max(first, 0)]
            if last is not None:
                rows = rows[max(len(rows) - max(last, 0), 0) :]
        return [event_from_row(r) for r in rows]

    def last_event(self, plan_id: str, kinds: Iterable[EventKind | str]) -> ProgressEvent | None:
        params: dict[str, Any] = {"p_plan": plan_id}
        where = sql.in_list("kind", "k", kind_names(kinds), params)
        with self._read() as conn:
            q = f"{sql.PLAN_EVENTS} AND {where} ORDER BY seq DESC LIMIT 1"
            row = conn.execute(q, params).first()
        return event_from_row(row) if row is not None else None

    def count_events(self, plan_id: str, *, kinds: Iterable[EventKind | str] | None = None) -> int:
        params: dict[str, Any] = {"p_plan": plan_id}
        q = sql.COUNT_EVENTS
        if kinds is not None:
            q += " AND " + sql.in_list("kind", "k", kind_names(kinds), params)
        with self._read() as conn:
            return int(conn.execute(q, params).scalar_one())

    def step_states(self, plan_id: str) -> dict[str, StepState]:
        with self._read() as conn:
            states = conn.execute(sql.STEP_STATES, {"p_plan": plan_id}).scalars()
        return states_by_step(states)

    def holds(self, plan_id: str) -> list[Hold]:
        with self._read() as conn:
            rows = conn.execute(sql.PLAN_HOLDS, {"p_plan": plan_id}).all()
        return [Hold(*r) for r in rows]

    # -- receipts ------------------------------------------------------------------------
    # Each receipt method is one transaction: the row change plus its ``action_*`` event and the
    # step's projection. On SQLite every write transaction starts with ``BEGIN IMMEDIATE``; on
    # PostgreSQL the key's row is locked ``FOR UPDATE`` and a racing insert of the same key waits
    # for the first one to commit, then does nothing.
    def claim_action(
        self,
        *,
        plan_id: str,
        step_id: str,
        action: str,
        key: str,
        run_id: str,
        by: str | None = None,
        branch: str | None = None,
        replace_token: str | None = None,
    ) -> ActionClaim:
        """Write the intent for ``key`` before the effect, unless the key is taken.

        ``replace_token``: take over an open intent with this token (a probe said the action
        was not applied). A ``not_applied`` row is claimed again like a new key.
        """
        rec = _intent(
            key,
            (plan_id, step_id, action),
            run_id,
            by,
            token=uuid.uuid4().hex,
            intent_at=utcnow().isoformat(),
            host=this_host(),
            pid=os.getpid(),
        )
        with self._write(durable=True) as conn:
            refuse_if_renamed(conn, plan_id)  # never claim under an id renamed meanwhile
            if self._insert_new(conn, rec):
                self._event(conn, rec, EventKind.action_intent, branch, run_id, claims=1)
                return ActionClaim(status="claimed", record=rec)
            row = conn.execute(self._receipt_locked(conn), {"p_key": key}).one()
            old = ReceiptRecord.from_row(row)
            if (old.plan_id, old.step_id, old.action) != (plan_id, step_id, action):
                raise ReceiptConflictError(
                    f"idempotency key {key!r} already belongs to action {old.action!r} of step "
                    f"{old.step_id!r} in plan {old.plan_id!r}; give each action its own key"
                )
            if old.state == "applied":
                return ActionClaim(status="applied", record=old)
            takeover = old.state == "intent" and replace_token is not None
            if old.state == "intent" and not takeover:
                return ActionClaim(status="open", record=old)
            if takeover and old.token != replace_token:
                return ActionClaim(status="open", record=old)
            if takeover:
                self._event(
                    conn,
                    old,
                    EventKind.action_not_applied,
                    branch,
                    run_id,
                    source="probe",
                    by=by,
                    note="a probe found the action not applied; claiming it again",
                )
            new = rec.model_copy(update={"claims": old.claims + 1})
            conn.execute(sql.UPDATE_RECEIPT, _update_values(new))
            self._event(conn, new, EventKind.action_intent, branch, run_id, claims=new.claims)
            return ActionClaim(status="claimed", record=new)

    def settle_action(
        self,
        key: str,
        *,
        outcome: Literal["applied", "not_applied"],
        token: str | None,
        by: str | None = None,
        external_id: str | None = None,
        response_hash: str | None = None,
        result: Any = None,
        source: str = "run",
        note: str | None = None,
        branch: str | None = None,
        step: tuple[str, str, str] | None = None,
        run_id: str | None = None,
    ) -> ReceiptRecord:
        """Settle the intent ``token`` holds: commit the receipt, or record it was not applied.

        ``token=None`` is a person's record (``waymark receipt``): it settles whatever intent is
        open, and with ``step=(plan_id, step_id, action)`` may also record a receipt for a key
        that has no row yet. An already applied key is never changed.
        """
        now = utcnow().isoformat()
        with self._write(durable=True) as conn:
            row = conn.execute(self._receipt_locked(conn), {"p_key": key}).first()
            if row is None:
                if token is not None or step is None:
                    raise ReceiptConflictError(f"no intent recorded for idempotency key {key!r}")
                old = _intent(key, step, run_id or "", by, token="", claims=0, intent_at=now)
                if not self._insert_new(conn, old):
                    # A run claimed the key between the read above and this insert (PostgreSQL
                    # at READ COMMITTED; SQLite's BEGIN IMMEDIATE excludes it). Its fresh intent
                    # is never overwritten by a record made without seeing it: settled
                    # not_applied, the run would act, fail to settle, and a later run would
                    # claim the key again.
                    raise ReceiptConflictError(
                        f"action {step[2]!r} (key {key!r}) was claimed by a run while this "
                        f"receipt was being recorded; nothing was recorded: list the step's "
                        f"receipts (`waymark receipt PLAN {step[1]}`) and record again"
                    )
            else:
                old = ReceiptRecord.from_row(row)
            if old.state == "applied":
                raise ReceiptConflictError(
                    f"action {old.action!r} (key {key!r}) already has a receipt: applied at "
                    f"{old.settled_at} by {old.settled_by}; a receipt is never changed"
                )
            if token is not None and (old.state != "intent" or old.token != token):
                raise ReceiptConflictError(
                    f"action {old.action!r} (key {key!r}) is no longer claimed by this attempt "
                    f"(now {old.state} by run {old.run_id}); its outcome must be reviewed"
                )
            new = old.model_copy(
                update={
                    "state": outcome,
                    "outcome": outcome,
                    "external_id": external_id,
                    "response_hash": response_hash,
                    "result": _keep_result(result),
                    "settled_at": now,
                    "settled_by": by,
                    "source": source,
                    "note": note,
                }
            )
            conn.execute(sql.UPDATE_RECEIPT, _update_values(new))
            applied = outcome == "applied"
            kind = EventKind.action_applied if applied else EventKind.action_not_applied
            by_run = run_id if run_id is not None or token is None else old.run_id
            info = new.summary()
            info.pop("run_id")
            self._event(conn, new, kind, branch, by_run, **info, note=note)
            return new

    def receipt(self, key: str) -> ReceiptRecord | None:
        """The row of ``key`` (intent or settled), if any."""
        with self._read() as conn:
            row = conn.execute(sql.RECEIPT, {"p_key": key}).first()
        return ReceiptRecord.from_row(row) if row is not None else None

    def receipts(self, plan_id: str, step_id: str | None = None) -> list[ReceiptRecord]:
        """Every receipt row of a plan (or of one step), oldest intent first."""
        q, params = sql.RECEIPTS_OF_PLAN, {"p_plan": plan_id}
        if step_id is not None:
            q, params = sql.RECEIPTS_OF_STEP, {**params, "p_step": step_id}
        with self._read() as conn:
            rows = [ReceiptRecord.from_row(r) for r in conn.execute(q, params)]
        return sorted(rows, key=lambda r: (r.intent_at, r.key))

    @staticmethod
    def _receipt_locked(conn: DbConnection) -> str:
        """A key's receipt row, locked ``FOR UPDATE`` on PostgreSQL (SQLite's write lock holds
        it already)."""
        return sql.RECEIPT if conn.backend == "sqlite" else sql.RECEIPT + sql.FOR_UPDATE

    def _insert_new(self, conn: DbConnection, rec: ReceiptRecord) -> bool:
        # ON CONFLICT DO NOTHING: a loser gets no row back (an error would abort a PostgreSQL
        # transaction).
        return conn.execute(sql.CLAIM_RECEIPT, rec.row_values()).first() is not None

    def _event(
        self,
        conn: DbConnection,
        rec: ReceiptRecord,
        kind: EventKind,
        branch: str | None,
        run_id: str | None,
        **data: Any,
    ) -> None:
        data = {"key": rec.key, "action": rec.action, **data}
        if kind == EventKind.action_intent:
            data.update(by=rec.intent_by, host=rec.host, pid=rec.pid)
        ev = ProgressEvent(
            plan_id=rec.plan_id,
            kind=kind,
            step_id=rec.step_id,
            branch=branch,
            run_id=run_id or None,
            data={k: v for k, v in data.items() if v is not None},
        )
        self._append(conn, ev, 60.0)

    # -- the projection folded again, the connections released ------------------------------
    @staticmethod
    def _fold(events: list[ProgressEvent]) -> tuple[dict[str, StepState], dict[str, int]]:
        states: dict[str, StepState] = {}
        last: dict[str, int] = {}
        for ev in events:
            assert ev.step_id is not None and ev.seq is not None
            states[ev.step_id] = apply_event(states.get(ev.step_id), ev)
            last[ev.step_id] = ev.seq
        return states, last

    def rebuild(self, plan_id: str, *, write: bool = False) -> dict[str, StepState]:
        if not write:
            return self._fold(self.events(plan_id, kinds=STEP_EVENT_KINDS))[0]
        # Read and rewrite in one transaction that keeps appends out meanwhile (SQLite: the
        # BEGIN IMMEDIATE write lock; PostgreSQL: a lock on the projection table).
        with self._write() as conn:
            for statement in sql.lock_tables(conn.backend, sql.STEPS):
                conn.execute_raw(statement)
            params: dict[str, Any] = {"p_plan": plan_id, "p_after": 0}
            where = sql.in_list("kind", "k", kind_names(STEP_EVENT_KINDS), params)
            rows = conn.execute(f"{sql.PLAN_EVENTS} AND {where} ORDER BY seq", params).all()
            states, last = self._fold([event_from_row(r) for r in rows])
            conn.execute(f"DELETE FROM {sql.STEPS} WHERE plan_id = :p_plan", params)
            sql.insert_step_states(conn, plan_id, states, last)
        return states

    def close(self) -> None:
        db = self._db
        if db is None:
            return
        try:
            self._check_file()
        except LedgerUnavailable:
            db.never_close()  # SQLite's close would checkpoint into a file gone or frozen
            return
        db.close()
