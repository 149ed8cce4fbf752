-- dagen schema, version 6: concurrency caps and run deadlines.
--
-- Concurrency caps. A capped run has a slot: its concurrency key (slot,
-- '' for a cap on the whole workflow). dagen_slots holds one row per
-- workflow and key with the cap (lim, the one of the latest run created
-- for the key) and how many runs hold the slot (running: the RUNNING runs
-- of the key). Every transaction that changes running locks the row first,
-- so the count is exact: a trigger that finds running < lim admits its
-- run, and one that does not creates it QUEUED. A QUEUED run has a row in
-- dagen_run_queue and none of its tasks queued; the transaction that ends
-- a RUNNING run of the key (complete, fail, cancel, time out) counts
-- running down and admits the key's first QUEUED runs, in id order, into
-- the room it has, queueing their ready tasks.
--
-- The queue is a table of its own, not an index of dagen_runs: an index
-- whose predicate or columns an admission changes would make the run's
-- update add index entries (not HOT).
--
-- Run deadlines. A run with a timeout has its deadline in deadline_at and
-- a timer of kind 'deadline' in dagen_timers (task '@deadline'), fired as
-- the others: it fails the run. timeout_ms is kept so a retry counts a new
-- deadline from the retry.

ALTER TABLE dagen_runs
    ADD COLUMN slot        text,
    ADD COLUMN timeout_ms  bigint,
    ADD COLUMN deadline_at timestamptz;

-- The status check of version 1, with QUEUED.
ALTER TABLE dagen_runs DROP CONSTRAINT dagen_runs_status_check;
ALTER TABLE dagen_runs ADD CONSTRAINT dagen_runs_status_check
    CHECK (status IN ('QUEUED', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED')) NOT VALID;
ALTER TABLE dagen_runs VALIDATE CONSTRAINT dagen_runs_status_check;

CREATE TABLE dagen_run_queue (
    workflow text NOT NULL,
    slot     text NOT NULL,
    run_id   uuid NOT NULL,
    PRIMARY KEY (workflow, slot, run_id)
);

ALTER TABLE dagen_run_queue SET (autovacuum_vacuum_scale_factor = 0.01);

CREATE TABLE dagen_slots (
    workflow text NOT NULL,
    key      text NOT NULL,
    lim      integer NOT NULL CHECK (lim >= 1),
    running  integer NOT NULL CHECK (running >= 0),
    PRIMARY KEY (workflow, key)
);

ALTER TABLE dagen_slots SET (autovacuum_vacuum_scale_factor = 0.01);

-- The kind check of version 1, with the deadline.
ALTER TABLE dagen_timers DROP CONSTRAINT dagen_timers_kind_check;
ALTER TABLE dagen_timers ADD CONSTRAINT dagen_timers_kind_check
    CHECK (kind IN ('sleep', 'retry', 'deadline')) NOT VALID;
ALTER TABLE dagen_timers VALIDATE CONSTRAINT dagen_timers_kind_check;
