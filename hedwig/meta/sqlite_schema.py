"""The embedded metadata store's tables, and bringing an older database up to date.

Schema 2 added the `garbage` table; schema 3 the subscriptions' `acked` column (shared
and pull subscriptions' acknowledgements above their consumed seq-id, opaque bytes). An
older database gets what it lacks (empty) when it is opened, and keeps working; a newer
one is refused, naming its version. Nothing is written to a database that is up to date
(a full disk takes no write).
"""

from hedwig.meta.interface import MetadataError

SCHEMA_VERSION = 3
# 0: a new database; 1: before the garbage table; 2: before the subscriptions' acked column
READABLE_SCHEMAS = (0, 1, 2, SCHEMA_VERSION)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS topics (
    topic   TEXT PRIMARY KEY,
    ranges  TEXT NOT NULL,
    version INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS subscriptions (
    topic         TEXT NOT NULL,
    subscriber_id TEXT NOT NULL,
    consumed_seq  INTEGER NOT NULL,
    preferences   TEXT NOT NULL,
    version       INTEGER NOT NULL,
    acked         BLOB NOT NULL DEFAULT x'',
    PRIMARY KEY (topic, subscriber_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS garbage (
    ledger_id INTEGER PRIMARY KEY,
    topic     TEXT NOT NULL
);
"""


def bring_up_to_date(db, path: str) -> None:
    """Create what a database of an older schema (or a new one) lacks; MetadataError for
    one newer than this code reads."""
    found = db.execute("PRAGMA user_version").fetchone()[0]
    if found not in READABLE_SCHEMAS:
        raise MetadataError(f"{path}: schema version {found}; this hedwig reads up to {SCHEMA_VERSION}")
    if found == SCHEMA_VERSION:
        return
    db.executescript(_SCHEMA)
    columns = {row[1] for row in db.execute("PRAGMA table_info(subscriptions)")}
    if "acked" not in columns:  # (a schema 1 or 2 database)
        db.execute("ALTER TABLE subscriptions ADD COLUMN acked BLOB NOT NULL DEFAULT x''")
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
