// The schema of the coordinator's SQLite file as ordered migrations: entry i
// moves a file from PRAGMA user_version i to i + 1. Only Store includes it.
//
// Thread-safe: constants.
#ifndef HPCAI500_SERVER_STORE_INTERNAL_STORE_SCHEMA_H_
#define HPCAI500_SERVER_STORE_INTERNAL_STORE_SCHEMA_H_

namespace hpcai500::server_internal {

// Ordered migrations: entry i moves a file from user_version i to i + 1.
// Never edit a released entry; append a new one.
inline constexpr const char* kStoreMigrations[] = {
    // 1: the first schema.
    R"sql(
CREATE TABLE submissions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  spec_yaml TEXT NOT NULL,
  created_ms INTEGER NOT NULL
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  submission_id INTEGER NOT NULL REFERENCES submissions(id),
  repetition INTEGER NOT NULL,
  spec BLOB NOT NULL,
  state INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  epochs BLOB,
  current_attempt INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_by_state ON runs(state);
CREATE INDEX runs_by_submission ON runs(submission_id);
CREATE TABLE attempts (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  number INTEGER NOT NULL,
  state TEXT NOT NULL,
  nodes TEXT NOT NULL,
  master_addr TEXT NOT NULL DEFAULT '',
  master_port INTEGER NOT NULL DEFAULT 0,
  started_ms INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (run_id, number)
);
CREATE TABLE events (
  run_id INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  line TEXT NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  UNIQUE (run_id, attempt, rank, seq)
);
CREATE TABLE results (
  run_id INTEGER PRIMARY KEY REFERENCES runs(id),
  quality REAL NOT NULL,
  target REAL NOT NULL,
  exponent REAL NOT NULL,
  forward_flops_per_sample REAL NOT NULL,
  samples INTEGER NOT NULL,
  train_seconds REAL NOT NULL,
  eval_seconds REAL NOT NULL,
  flops REAL NOT NULL,
  valid_flops REAL NOT NULL,
  reached_target INTEGER NOT NULL,
  convention TEXT NOT NULL
);
CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  address TEXT NOT NULL,
  slots INTEGER NOT NULL,
  cpus INTEGER NOT NULL,
  gpus INTEGER NOT NULL,
  labels BLOB,
  last_seen_ms INTEGER NOT NULL
);
)sql",
    // 2: a result's energy and Valid FLOPS per watt (0: not measured).
    R"sql(
ALTER TABLE results ADD COLUMN energy_joules REAL NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN valid_flops_per_watt REAL NOT NULL DEFAULT 0;
)sql",
    // 3: the spec fields runs are listed by, as columns that SQL can filter
    // and index (filled from each run's spec by FillRunSpecColumns).
    R"sql(
ALTER TABLE runs ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN workload TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN config TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_by_name ON runs(name, state);
)sql",
    // 4: resumed attempts, the time a resumed run lost, and each rank's exit
    // (stored before it is acknowledged, so a finished rank stays finished
    // across a coordinator restart).
    R"sql(
ALTER TABLE attempts ADD COLUMN resume_from_attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN resume_from_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN resumed_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN lost_seconds REAL NOT NULL DEFAULT 0;
CREATE TABLE exits (
  run_id INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  exit_code INTEGER NOT NULL,
  signal INTEGER NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  stderr_tail TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (run_id, attempt, rank)
);
)sql",
    // 5: who may do what: the user who submitted each run, who took its
    // result off the leaderboard and why, the tokens (keyed hashes only) and
    // the audit trail.
    R"sql(
ALTER TABLE runs ADD COLUMN user TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN invalidated_by TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN invalidation_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN invalidated_ms INTEGER NOT NULL DEFAULT 0;
CREATE TABLE tokens (
  id TEXT PRIMARY KEY,
  user TEXT NOT NULL,
  role TEXT NOT NULL,
  node TEXT NOT NULL DEFAULT '',
  hash BLOB NOT NULL,
  created_ms INTEGER NOT NULL,
  revoked_ms INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  time_ms INTEGER NOT NULL,
  user TEXT NOT NULL,
  role TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  peer TEXT NOT NULL,
  allowed INTEGER NOT NULL,
  detail TEXT NOT NULL
);
)sql",
    // 6: the shared-cluster queue: each run's queue, priority and hold; each
    // node's drain state and inventory; the inventory of an attempt's nodes
    // (provenance). A blob is the serialized proto message.
    R"sql(
ALTER TABLE runs ADD COLUMN queue TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN held_by TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN state TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN state_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN inventory BLOB NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN inventory BLOB NOT NULL DEFAULT '';
CREATE INDEX runs_by_user ON runs(user, created_ms);
)sql",
    // 7: the leaderboard kept up to date: one row per listed submission (a
    // serialized LeaderboardRow without its rank), indexed in the order it
    // is listed, so a page is read without reading the runs (filled from
    // the stored runs by FillLeaderboard; Store keeps it current).
    R"sql(
CREATE TABLE leaderboard (
  submission_id INTEGER PRIMARY KEY REFERENCES submissions(id),
  workload TEXT NOT NULL,
  config TEXT NOT NULL,
  unranked INTEGER NOT NULL,
  valid_flops REAL,
  row BLOB NOT NULL
);
CREATE INDEX leaderboard_order
  ON leaderboard(workload, config, unranked, valid_flops DESC, submission_id);
)sql",
    // 8: the leaderboard by level: each row's level as a column (the page's
    // level filter), and every row written again so that it carries what
    // the page shows beside the score (devices, versions, user; filled by
    // FillLeaderboard).
    R"sql(
ALTER TABLE leaderboard ADD COLUMN level TEXT NOT NULL DEFAULT '';
CREATE INDEX leaderboard_level_order ON leaderboard(
  workload, config, level, unranked, valid_flops DESC, submission_id);
)sql",
    // 9: regress baselines: the run each `hpcai500 regress` series is
    // judged against, promoted by `hpcai500 baseline promote`; one row per
    // series (methodology/regress_band.h RegressSeriesKey).
    R"sql(
CREATE TABLE regress_baselines (
  series TEXT PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  promoted_by TEXT NOT NULL,
  promoted_ms INTEGER NOT NULL
);
)sql",
    // 10: idempotent submits: each client request id (per user) with the
    // digest of its spec text and its answer (a serialized SubmitResponse:
    // the submissions and run ids it created), written in the transaction
    // that stores the runs and forgotten after a day (Store::
    // kSubmitRequestRetentionMs).
    R"sql(
CREATE TABLE submit_requests (
  user TEXT NOT NULL,
  request_id TEXT NOT NULL,
  spec_digest TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  response BLOB NOT NULL,
  PRIMARY KEY (user, request_id)
);
CREATE INDEX submit_requests_by_time ON submit_requests(created_ms);
)sql",
    // 11: the coordinator's maintenance window (`hpcai500 maintenance`): at
    // most one row, kept while the window is on, so that it outlives the
    // restart of hpcai500d it is there for.
    R"sql(
CREATE TABLE maintenance (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  until_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL,
  reason TEXT NOT NULL,
  started_by TEXT NOT NULL
);
)sql",
    // 12: facts about the store as a whole, by key; first
    // "leaderboard_rules": the digest of what the leaderboard's rows were
    // computed by (Store::kLeaderboardRulesKey), so that a binary with other
    // rules (the registry's reference convergence points, a row format)
    // writes every row again when it opens the file.
    R"sql(
CREATE TABLE store_facts (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
)sql",
    // 13: node health (docs/design.md "Node health"): what was recorded
    // against each node (stragglers, flagged pre-flights), every pre-flight
    // measured (a serialized PreflightResult, judged), and the nodes flagged
    // now with the evidence.
    R"sql(
CREATE TABLE node_incidents (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  node TEXT NOT NULL,
  time_ms INTEGER NOT NULL,
  kind TEXT NOT NULL,
  run_id INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX node_incidents_by_node ON node_incidents(node, id);
CREATE INDEX node_incidents_by_run ON node_incidents(run_id);
CREATE TABLE node_preflights (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  node TEXT NOT NULL,
  time_ms INTEGER NOT NULL,
  result BLOB NOT NULL
);
CREATE INDEX node_preflights_by_node ON node_preflights(node, id);
CREATE TABLE node_flags (
  node TEXT PRIMARY KEY,
  flagged_ms INTEGER NOT NULL,
  evidence TEXT NOT NULL
);
)sql",
};
// The migration after which the runs written before it get their spec
// columns (SQL cannot read the serialized spec).
inline constexpr int kSpecColumnsVersion = 3;
// The migration after which the leaderboard table (made by migration 7) is
// filled from the stored runs: written again, for a file already at 7, with
// each row's level and what the page shows.
inline constexpr int kLeaderboardLevelVersion = 8;

}  // namespace hpcai500::server_internal

#endif  // HPCAI500_SERVER_STORE_INTERNAL_STORE_SCHEMA_H_
