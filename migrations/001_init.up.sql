-- dagen schema, version 1.
--
-- Every object is created in the current schema (the first entry of
-- search_path), so tests and tenants of a shared database can each own one.

-- Runs. pending counts the tasks that still have to finish for the run to
-- complete (every task except the onfailure task).
CREATE TABLE dagen_runs (
    id              uuid PRIMARY KEY,
    workflow        text NOT NULL,
    fingerprint     text NOT NULL,
    tenant          text NOT NULL,
    status          text NOT NULL CHECK (status IN ('RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED')),
    input           bytea,
    failure_step    text,
    failure_attempt integer,
    failure_message text,
    pending         integer NOT NULL CHECK (pending >= 0),
    created_at      timestamptz NOT NULL,
    finished_at     timestamptz
);

-- Pruning scans runs by age. created_at never changes, so the updates a
-- run takes as its tasks finish stay HOT (no new index entries).
CREATE INDEX dagen_runs_created_idx ON dagen_runs (created_at);

-- Tasks: one row per step of a run. seq is the position in the run's task
-- list (creation order); children is derived from the parents at insert so
-- a completion can count its children down without reading the graph.
CREATE TABLE dagen_tasks (
    run_id          uuid NOT NULL,
    name            text NOT NULL,
    seq             integer NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('step', 'sleep', 'onfailure')),
    parents         text[] NOT NULL,
    children        text[] NOT NULL,
    pending_parents integer NOT NULL CHECK (pending_parents >= 0),
    status          text NOT NULL CHECK (status IN ('PENDING', 'QUEUED', 'RUNNING', 'SLEEPING', 'BACKOFF',
                                                    'COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED')),
    attempt         integer NOT NULL DEFAULT 0,
    max_attempts    integer NOT NULL CHECK (max_attempts >= 1),
    output          bytea,
    error           text NOT NULL DEFAULT '',
    reason          text NOT NULL DEFAULT '',
    wake_at         timestamptz,
    worker          text NOT NULL DEFAULT '',
    finished_at     timestamptz,
    -- The common events of the task's current round, kept in the row the
    -- transition writes anyway instead of as rows of dagen_events: QUEUED
    -- (when it last became QUEUED), STARTED (its last claim) and COMPLETED.
    -- Each holds the id it has in the event log, from the log's sequence,
    -- so the log reads in the same order; a round that ends for a retry,
    -- a rescue or a release is written out to dagen_events then.
    queued_event    bigint,
    queued_at       timestamptz,
    started_event   bigint,
    started_at      timestamptz,
    completed_event bigint,
    PRIMARY KEY (run_id, name)
);

-- dagen_tasks has no index but its primary key, and none may cover a column
-- a task's transitions change (status included, as a partial index's
-- predicate): so its updates can be HOT, adding no index entries, which
-- keeps its lookups to one entry a task.

-- Leases: one row per RUNNING task, written by the claim and removed when
-- the attempt ends (or is rescued, released or cancelled). The rescuer
-- scans it by lease end; it holds only running tasks, so it stays small.
-- Its key is the attempt's STARTED event id (dagen_tasks.started_event),
-- which every batch that loads a task knows. The table churns a row per
-- step, so leases are removed with a plan made for each execution (see
-- DeleteLeases in queries/tasks.sql), never one cached when it was empty.
CREATE TABLE dagen_leases (
    id          bigint PRIMARY KEY,
    run_id      uuid NOT NULL,
    task        text NOT NULL,
    worker      text NOT NULL,
    lease_until timestamptz NOT NULL
);

-- Tenant groups of the fair queue: a sequential group id per tenant and the
-- tenant's next free block.
CREATE SEQUENCE dagen_tenant_group_seq MINVALUE 0 START WITH 0;

CREATE TABLE dagen_tenant_groups (
    tenant    text PRIMARY KEY,
    group_id  bigint NOT NULL UNIQUE CHECK (group_id >= 0 AND group_id < 1048576),
    block_ptr bigint NOT NULL DEFAULT 0
);

-- The consumption frontier: the highest block ever claimed. One row.
CREATE TABLE dagen_queue_frontier (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    block     bigint NOT NULL
);

INSERT INTO dagen_queue_frontier (singleton, block) VALUES (true, 0);

-- The ready queue holds only runnable tasks; a claim deletes its rows.
-- id = group_id + 1048576 * block, so id order serves tenants round-robin.
CREATE TABLE dagen_ready (
    id       bigint PRIMARY KEY,
    run_id   uuid NOT NULL,
    task     text NOT NULL,
    workflow text NOT NULL,
    UNIQUE (run_id, task)
);

-- No index on workflow: a claim walks the primary key in id order (that
-- order is the fairness) and filters by the worker's workflows, which no
-- (workflow, id) index can serve for several workflows at once. Every
-- index here costs each enqueue an insert.

-- Timers: sleeps and retry delays, at most one per task, fenced by attempt.
CREATE TABLE dagen_timers (
    run_id  uuid NOT NULL,
    task    text NOT NULL,
    attempt integer NOT NULL,
    wake_at timestamptz NOT NULL,
    kind    text NOT NULL CHECK (kind IN ('sleep', 'retry')),
    PRIMARY KEY (run_id, task)
);

CREATE INDEX dagen_timers_wake_idx ON dagen_timers (wake_at);

-- The event ids of dagen_events and of the events kept in dagen_tasks rows.
CREATE SEQUENCE dagen_event_seq;

-- The append-only event log, read per run oldest first, together with the
-- events kept in dagen_tasks rows.
CREATE TABLE dagen_events (
    run_id  uuid NOT NULL,
    id      bigint NOT NULL DEFAULT nextval('dagen_event_seq'),
    at      timestamptz NOT NULL,
    task    text NOT NULL,
    type    text NOT NULL,
    attempt integer NOT NULL,
    detail  text NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, id)
);

-- Workers: one narrow row each, for cheap heartbeats. While alive_until is
-- ahead, the worker's RUNNING tasks are not rescued.
CREATE TABLE dagen_workers (
    id           text PRIMARY KEY,
    heartbeat_at timestamptz NOT NULL,
    alive_until  timestamptz NOT NULL
);

-- The hot tables churn: vacuum them early.
ALTER TABLE dagen_ready SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE dagen_leases SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE dagen_timers SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
-- Half of each tasks page is left free for the new versions of its rows: a
-- task is updated three times or so, and an update stays HOT only when the
-- new version fits on the same page.
ALTER TABLE dagen_tasks SET (autovacuum_vacuum_scale_factor = 0.05, fillfactor = 50);
ALTER TABLE dagen_runs SET (autovacuum_vacuum_scale_factor = 0.05, fillfactor = 80);
ALTER TABLE dagen_tenant_groups SET (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000);
ALTER TABLE dagen_queue_frontier SET (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000);
