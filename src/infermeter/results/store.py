"""The results store: SQLite index of run folders and imported published results.

Location: ``--store PATH``, else ``$INFERMETER_HOME/store.sqlite``, else
``$XDG_DATA_HOME/infermeter/store.sqlite`` (``~/.local/share`` by default).
Every write runs in one transaction: a failure leaves the store as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infermeter.errors import StoreError, StorePathError
from infermeter.results import schema
from infermeter.results.published import PublishedResult
from infermeter.results.runfolder import RunFolder, load_run

_PUBLISHED_FIELDS = tuple(PublishedResult.__dataclass_fields__)


def default_store_path() -> Path:
    """The store path from $INFERMETER_HOME or the XDG data directory."""
    home = os.environ.get("INFERMETER_HOME")
    if home:
        return Path(home) / "store.sqlite"
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "infermeter" / "store.sqlite"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Store:
    """An open results store; use as a context manager or call ``close()``."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else default_store_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, isolation_level=None)
            self._conn.row_factory = sqlite3.Row
            schema.migrate(self._conn)
        except sqlite3.DatabaseError as exc:
            raise StorePathError(
                f"Cannot open the results store {str(self.path)!r} ({exc}); "
                "pass another file with --store PATH."
            ) from None
        except OSError as exc:
            raise StorePathError(
                f"Cannot create the results store {str(self.path)!r} "
                f"({exc.strerror or exc}); pass another file with --store PATH."
            ) from None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()

    @property
    def version(self) -> int:
        return schema.version(self._conn)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN ... COMMIT, or ROLLBACK on any exception (then re-raised)."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    # ---- runs ---------------------------------------------------------------

    def index_run(self, run: RunFolder | str | Path) -> dict[str, Any]:
        """Index (or re-index) a run folder; returns the stored row.

        One row per run: the same run (id and start time) seen at a new path
        moves; another run that happens to carry the same id (older folders
        used their name as id) gets the id with a suffix; a run that replaced
        another in the same folder (``--force``) replaces its row.
        """
        folder = run if isinstance(run, RunFolder) else load_run(run)
        row = _run_row(folder)
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self.transaction() as conn:
            row["run_id"] = _unique_id(conn, row)
            conn.execute(
                "DELETE FROM runs WHERE path = ? AND run_id != ?",
                (row["path"], row["run_id"]),
            )
            conn.execute(
                f"INSERT OR REPLACE INTO runs ({columns}) VALUES ({marks})",
                tuple(row.values()),
            )
        return row

    def runs(
        self, *, benchmark: str | None = None, scenario: str | None = None
    ) -> list[dict[str, Any]]:
        sql, args = "SELECT * FROM runs WHERE 1=1", list[str]()
        if benchmark:
            sql, args = sql + " AND benchmark = ?", [*args, benchmark]
        if scenario:
            sql, args = sql + " AND scenario = ?", [*args, scenario]
        rows = self._conn.execute(sql + " ORDER BY started_at, run_id", args)
        return [dict(r) for r in rows]

    def run(self, run_id: str) -> dict[str, Any]:
        """One run by id or unique id prefix."""
        rows = self._conn.execute(
            "SELECT * FROM runs WHERE run_id = ? OR run_id LIKE ? ORDER BY run_id",
            (run_id, run_id.replace("%", "") + "%"),
        ).fetchall()
        exact = [r for r in rows if r["run_id"] == run_id]
        if exact or len(rows) == 1:
            return dict((exact or rows)[0])
        if not rows:
            raise StoreError(
                f"No run {run_id!r} in {str(self.path)!r}; "
                "see 'infermeter results list'."
            )
        ids = ", ".join(r["run_id"] for r in rows[:5])
        raise StoreError(f"Run id {run_id!r} is ambiguous ({ids}); give more of it.")

    def remove_run(self, run_id: str) -> str:
        """Drop a run from the index (the folder on disk is left alone)."""
        full = self.run(run_id)["run_id"]
        with self.transaction() as conn:
            conn.execute("DELETE FROM runs WHERE run_id = ?", (full,))
        return str(full)

    # ---- published results --------------------------------------------------

    def add_published(self, rows: Iterable[PublishedResult], *, source: str) -> int:
        """Insert or replace published rows, all or nothing; returns the count."""
        count, rounds = 0, set[str]()
        columns = ", ".join((*_PUBLISHED_FIELDS, "imported_at"))
        marks = ", ".join("?" for _ in range(len(_PUBLISHED_FIELDS) + 1))
        now = _now()
        with self.transaction() as conn:
            for row in rows:
                values = [getattr(row, f) for f in _PUBLISHED_FIELDS]
                conn.execute(
                    f"INSERT OR REPLACE INTO published ({columns}) VALUES ({marks})",
                    (*values, now),
                )
                count, rounds = count + 1, rounds | {row.round}
            conn.execute(
                "INSERT INTO imports (source, rounds, row_count, imported_at) "
                "VALUES (?, ?, ?, ?)",
                (source, ",".join(sorted(rounds)), count, now),
            )
        return count

    def published(
        self,
        *,
        benchmark: str | None = None,
        scenario: str | None = None,
        round_: str | None = None,
    ) -> list[PublishedResult]:
        """Published rows; ``benchmark`` matches with or without -99/-99.9."""
        sql, args = "SELECT * FROM published WHERE 1=1", list[str]()
        if benchmark:
            sql += " AND (benchmark = ? OR benchmark LIKE ? OR benchmark LIKE ?)"
            args += [benchmark, f"{benchmark}-99", f"{benchmark}-99.9"]
        if scenario:
            sql, args = sql + " AND scenario = ?", [*args, scenario]
        if round_:
            sql, args = sql + " AND round = ?", [*args, round_]
        rows = self._conn.execute(sql + " ORDER BY round, result_id, benchmark", args)
        return [_published_from_row(r) for r in rows]

    def remove_published(self, round_: str) -> int:
        with self.transaction() as conn:
            cursor = conn.execute("DELETE FROM published WHERE round = ?", (round_,))
        return int(cursor.rowcount)

    def imports(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._conn.execute("SELECT * FROM imports")]


def _unique_id(conn: sqlite3.Connection, row: dict[str, Any]) -> str:
    """The row's run id, suffixed when another run already holds it."""
    run_id = str(row["run_id"])
    held = conn.execute(
        "SELECT path, started_at FROM runs WHERE run_id = ?", (run_id,)
    ).fetchone()
    if held is None or held["path"] == row["path"]:
        return run_id
    if held["started_at"] == row["started_at"]:
        return run_id  # the same run, moved or copied: one row, the new path
    suffix = hashlib.sha1(str(row["path"]).encode()).hexdigest()[:6]
    return f"{run_id}~{suffix}"


def _published_from_row(row: sqlite3.Row) -> PublishedResult:
    values = {f: row[f] for f in _PUBLISHED_FIELDS}
    values["inferred"] = bool(values["inferred"])
    values["duplicate"] = bool(values["duplicate"])
    return PublishedResult(**values)


def _run_row(run: RunFolder) -> dict[str, Any]:
    # run.json is read as given: every column gets a text, a number or NULL,
    # whatever odd value a hand-edited file holds.
    meta, metrics = run.meta, run.metrics
    env = meta.get("environment")
    env = env if isinstance(env, dict) else {}
    sut, engine = meta.get("sut") or {}, meta.get("engine") or {}
    return {
        "run_id": run.run_id,
        "path": str(run.path.resolve()),
        "benchmark": run.benchmark,
        "scenario": run.scenario,
        "mode": _text(meta.get("mode")),
        "sut": _text(sut.get("name") if isinstance(sut, dict) else sut),
        "engine": _text(engine.get("name") if isinstance(engine, dict) else engine),
        "verdict": _text(run.verdict.get("result")) or _accuracy_verdict(meta),
        "valid": int(run.verdict.get("valid") is True),
        "started_at": _text(meta.get("started_at")),
        "samples_per_second": _number(metrics.get("samples_per_second")),
        "tokens_per_second": _number(metrics.get("tokens_per_second")),
        "latency_p99_ns": _p99(metrics, "latency_ns"),
        "ttft_p99_ns": _p99(metrics, "ttft_ns"),
        "tpot_p99_ns": _p99(metrics, "tpot_ns"),
        "environment_json": json.dumps(env, sort_keys=True, default=str),
        "indexed_at": _now(),
        "host": _text(env.get("host")),
        "gpu": json.dumps(env.get("gpu")) if env.get("gpu") is not None else None,
        "power_json": json.dumps(meta["power"]) if meta.get("power") else None,
    }


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None if not value else json.dumps(value, sort_keys=True)
    return str(value)


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None


def _accuracy_verdict(meta: dict[str, Any]) -> str | None:
    """An accuracy run has no performance verdict: its accuracy PASS / FAIL stands in."""
    accuracy = meta.get("accuracy")
    passed = accuracy.get("passed") if isinstance(accuracy, dict) else None
    return None if passed is None else ("PASS" if passed else "FAIL")


def _p99(metrics: dict[str, Any], key: str) -> float | None:
    block = metrics.get(key)
    value = block.get("p99") if isinstance(block, dict) else None
    return float(value) if isinstance(value, int | float) else None
