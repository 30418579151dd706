"""Versioned SQLite schema of the results store; ``PRAGMA user_version`` is the version.

Each migration runs in its own transaction, so a store is always at one version.
Append new migrations; never edit a released one (stores in the wild ran it).
"""

from __future__ import annotations

import sqlite3

from infermeter.errors import StoreError

V1 = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    scenario TEXT NOT NULL,
    mode TEXT,
    sut TEXT,
    engine TEXT,
    verdict TEXT,
    valid INTEGER,
    started_at TEXT,
    samples_per_second REAL,
    tokens_per_second REAL,
    latency_p99_ns REAL,
    ttft_p99_ns REAL,
    tpot_p99_ns REAL,
    environment_json TEXT,
    indexed_at TEXT NOT NULL
);
CREATE TABLE published (
    round TEXT NOT NULL,
    result_id TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    scenario TEXT NOT NULL,
    division TEXT NOT NULL,
    suite TEXT,
    availability TEXT,
    submitter TEXT,
    system TEXT,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    nodes INTEGER,
    total_accelerators INTEGER,
    accelerator_raw TEXT,
    accelerator TEXT,
    accelerator_variant TEXT,
    power_w REAL,
    energy_mj_per_query REAL,
    software TEXT,
    inferred INTEGER,
    duplicate INTEGER,
    flags TEXT,
    source TEXT,
    retrieved_at TEXT,
    details_url TEXT,
    imported_at TEXT NOT NULL,
    PRIMARY KEY (round, result_id, benchmark, scenario, division)
);
"""

# v2: environment columns for filtering, the power-trace summary, an import log
# and an index for compare's lookups.
V2 = """
ALTER TABLE runs ADD COLUMN host TEXT;
ALTER TABLE runs ADD COLUMN gpu TEXT;
ALTER TABLE runs ADD COLUMN power_json TEXT;
CREATE TABLE imports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source TEXT NOT NULL,
    rounds TEXT NOT NULL,
    row_count INTEGER NOT NULL,
    imported_at TEXT NOT NULL
);
CREATE INDEX published_lookup ON published (benchmark, scenario);
"""

MIGRATIONS: tuple[str, ...] = (V1, V2)
LATEST = len(MIGRATIONS)


def version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, target: int = LATEST) -> int:
    """Bring the store up to ``target``; returns the version it is now at."""
    current = version(conn)
    if current > LATEST:
        raise StoreError(
            f"The results store has schema version {current}, newer than this "
            f"infermeter ({LATEST}); upgrade infermeter or use --store PATH."
        )
    for number in range(current + 1, target + 1):
        _apply(conn, number, MIGRATIONS[number - 1])
    return version(conn)


def _apply(conn: sqlite3.Connection, number: int, script: str) -> None:
    statements = [s.strip() for s in script.split(";") if s.strip()]
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in statements:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {number}")
    except sqlite3.Error:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
