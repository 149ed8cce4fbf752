-- dagen schema, version 7: signal waits and schedules.
--
-- Signal waits (//dag:signal). A task of kind 'signal' is queued and
-- claimed like a step once its parents are resolved; the worker hands it
-- back at once to wait: it is then AWAITING, holds no lease, and has a
-- timer of kind 'signal' when its wait ends (fired, it skips the task with
-- the reason kept in its row). A signal sent before the wait begins is
-- held in the task's signal column and becomes its output when it does.
-- Every transition of a wait locks its run first, as all task writers do,
-- so a wait resolves exactly once.
ALTER TABLE dagen_tasks ADD COLUMN signal bytea;

ALTER TABLE dagen_tasks DROP CONSTRAINT dagen_tasks_kind_check;
ALTER TABLE dagen_tasks ADD CONSTRAINT dagen_tasks_kind_check
    CHECK (kind IN ('step', 'sleep', 'onfailure', 'map', 'element', 'signal')) NOT VALID;
ALTER TABLE dagen_tasks VALIDATE CONSTRAINT dagen_tasks_kind_check;

ALTER TABLE dagen_tasks DROP CONSTRAINT dagen_tasks_status_check;
ALTER TABLE dagen_tasks ADD CONSTRAINT dagen_tasks_status_check
    CHECK (status IN ('PENDING', 'QUEUED', 'RUNNING', 'SLEEPING', 'BACKOFF', 'MAPPING', 'AWAITING',
                      'COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED')) NOT VALID;
ALTER TABLE dagen_tasks VALIDATE CONSTRAINT dagen_tasks_status_check;

ALTER TABLE dagen_timers DROP CONSTRAINT dagen_timers_kind_check;
ALTER TABLE dagen_timers ADD CONSTRAINT dagen_timers_kind_check
    CHECK (kind IN ('sleep', 'retry', 'deadline', 'signal')) NOT VALID;
ALTER TABLE dagen_timers VALIDATE CONSTRAINT dagen_timers_kind_check;

-- Schedules: runs of a workflow for a tenant at the slots of a cron
-- expression. next_at is the next slot to fire; a worker fires a due
-- schedule by locking its row (FOR UPDATE SKIP LOCKED, still due at the
-- next_at it read), creating the slots' runs, each keyed
-- 'schedule:<name>:<slot>', and moving next_at, in one transaction.
-- Declared schedules (//dag:schedule) have no input: their func builds
-- it from the slot's time.
CREATE TABLE dagen_schedules (
    workflow   text NOT NULL,
    tenant     text NOT NULL,
    name       text NOT NULL,
    cron       text NOT NULL,
    zone       text NOT NULL DEFAULT '',
    catchup    text NOT NULL CHECK (catchup IN ('latest', 'all', 'none')),
    input      bytea,
    declared   boolean NOT NULL,
    paused     boolean NOT NULL DEFAULT false,
    next_at    timestamptz NOT NULL,
    last_at    timestamptz,
    last_run   uuid,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (workflow, tenant, name)
);

-- Every worker looks for due schedules every second or so.
CREATE INDEX dagen_schedules_due_idx ON dagen_schedules (next_at) WHERE NOT paused;
