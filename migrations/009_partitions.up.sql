-- dagen schema, version 9: runs, tasks and events partitioned by run id.
--
-- Pruning by DELETE costs about as much as the work itself at tens of
-- thousands of steps a second: every row is written once more, and vacuum
-- reads it all again. So the history tables (dagen_runs, dagen_tasks,
-- dagen_events) are range-partitioned by run id. Run ids are UUIDv7: their
-- first 48 bits are the millisecond they were made, so a range of ids is a
-- range of time, and the three tables share their ranges (a run's tasks
-- and events are in the partitions of its run). The store's leader keeps
-- partitions made ahead of time (pgstore, internal/maintenance/partitions.go) and prunes a
-- range by dropping its three partitions once every run in it finished
-- before the retention cutoff. A run still running in an old range keeps
-- that range whole until it finishes; retry, the one way to reopen a
-- finished run, takes the range's dagen_partitions row FOR SHARE first, and
-- a drop takes it FOR UPDATE before it checks, so no run is reopened in a
-- range being dropped.
--
-- dagen_partitions lists the ranges, [from_id, to_id), by suffix: the
-- partitions of a range are dagen_runs_<suffix>, dagen_tasks_<suffix> and
-- dagen_events_<suffix>. Ids no range holds (made by a clock far behind or
-- ahead, or while no leader made ranges ahead) go to the DEFAULT
-- partitions, which are pruned by DELETE as before.
--
-- This migration turns the existing tables into the first range, p0, which
-- holds every id made before it ran, by attaching them: no row is copied.
-- The runs made between it and the leader's first round go to the default
-- partitions; the ranges the leader makes start past them.
--
-- The conversion is one DO block. Its statements rename the tables and
-- create partitioned ones of the same names and columns, which sqlc (it
-- reads these files for the column types of the queries) need not see: the
-- columns do not change.
--
-- A unique index of a partitioned table must contain the partition key, so
-- idempotency keys get a table of their own, dagen_run_keys, in place of
-- dagen_runs_key_idx: a keyed trigger inserts its key there first (ON
-- CONFLICT DO NOTHING) and its run only when the key was free. Pruning a
-- run deletes its key.

CREATE TABLE dagen_run_keys (
    workflow text NOT NULL,
    tenant   text NOT NULL,
    key      text NOT NULL,
    run_id   uuid NOT NULL,
    PRIMARY KEY (workflow, tenant, key)
);

CREATE INDEX dagen_run_keys_run_idx ON dagen_run_keys (run_id);

INSERT INTO dagen_run_keys (workflow, tenant, key, run_id)
SELECT workflow, tenant, key, id FROM dagen_runs WHERE key IS NOT NULL;

DROP INDEX dagen_runs_key_idx;

CREATE TABLE dagen_partitions (
    suffix  text PRIMARY KEY,
    from_id uuid NOT NULL,
    to_id   uuid NOT NULL,
    CHECK (from_id < to_id)
);

DO $$
DECLARE
    -- Now, as the lowest UUIDv7 of this millisecond.
    ms    text := lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0');
    bound uuid := (substr(ms, 1, 8) || '-' || substr(ms, 9, 4) || '-0000-0000-000000000000')::uuid;
    top   uuid;
BEGIN
    -- p0 must hold every id there is, those of a clock ahead included.
    -- (Postgres has no max(uuid); the primary keys give the last ones.)
    SELECT greatest((SELECT id FROM dagen_runs ORDER BY id DESC LIMIT 1),
                    (SELECT run_id FROM dagen_tasks ORDER BY run_id DESC LIMIT 1),
                    (SELECT run_id FROM dagen_events ORDER BY run_id DESC LIMIT 1)) INTO top;
    IF top >= bound THEN
        ms := lpad(to_hex(('x' || substr(replace(top::text, '-', ''), 1, 12))::bit(48)::bigint + 1), 12, '0');
        bound := (substr(ms, 1, 8) || '-' || substr(ms, 9, 4) || '-0000-0000-000000000000')::uuid;
    END IF;

    ALTER TABLE dagen_runs RENAME TO dagen_runs_p0;
    ALTER INDEX dagen_runs_pkey RENAME TO dagen_runs_p0_pkey;
    ALTER INDEX dagen_runs_created_idx RENAME TO dagen_runs_p0_created_idx;
    ALTER INDEX dagen_runs_workflow_idx RENAME TO dagen_runs_p0_workflow_idx;
    ALTER INDEX dagen_runs_tenant_idx RENAME TO dagen_runs_p0_tenant_idx;
    ALTER TABLE dagen_tasks RENAME TO dagen_tasks_p0;
    ALTER INDEX dagen_tasks_pkey RENAME TO dagen_tasks_p0_pkey;
    ALTER TABLE dagen_events RENAME TO dagen_events_p0;
    ALTER INDEX dagen_events_pkey RENAME TO dagen_events_p0_pkey;

    -- The columns and checks of versions 1 to 8, in their order and under
    -- their names (an attached table must have the parent's checks by
    -- name).
    CREATE TABLE dagen_runs (
        id              uuid NOT NULL,
        workflow        text NOT NULL,
        fingerprint     text NOT NULL,
        tenant          text NOT NULL,
        status          text NOT NULL CONSTRAINT dagen_runs_status_check
                            CHECK (status IN ('QUEUED', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED')),
        input           bytea,
        failure_step    text,
        failure_attempt integer,
        failure_message text,
        pending         integer NOT NULL CONSTRAINT dagen_runs_pending_check CHECK (pending >= 0),
        created_at      timestamptz NOT NULL,
        finished_at     timestamptz,
        key             text,
        slot            text,
        timeout_ms      bigint,
        deadline_at     timestamptz,
        CONSTRAINT dagen_runs_pkey PRIMARY KEY (id)
    ) PARTITION BY RANGE (id);
    CREATE INDEX dagen_runs_created_idx ON dagen_runs (created_at);
    CREATE INDEX dagen_runs_workflow_idx ON dagen_runs (workflow, id DESC);
    CREATE INDEX dagen_runs_tenant_idx ON dagen_runs (tenant, id DESC);

    CREATE TABLE dagen_tasks (
        run_id          uuid NOT NULL,
        name            text NOT NULL,
        seq             integer NOT NULL,
        kind            text NOT NULL CONSTRAINT dagen_tasks_kind_check
                            CHECK (kind IN ('step', 'sleep', 'onfailure', 'map', 'element', 'signal')),
        parents         text[] NOT NULL,
        children        text[] NOT NULL,
        pending_parents integer NOT NULL CONSTRAINT dagen_tasks_pending_parents_check CHECK (pending_parents >= 0),
        status          text NOT NULL CONSTRAINT dagen_tasks_status_check
                            CHECK (status IN ('PENDING', 'QUEUED', 'RUNNING', 'SLEEPING', 'BACKOFF', 'MAPPING', 'AWAITING',
                                              'COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED')),
        attempt         integer NOT NULL DEFAULT 0,
        max_attempts    integer NOT NULL CONSTRAINT dagen_tasks_max_attempts_check CHECK (max_attempts >= 1),
        output          bytea,
        error           text NOT NULL DEFAULT '',
        reason          text NOT NULL DEFAULT '',
        wake_at         timestamptz,
        worker          text NOT NULL DEFAULT '',
        finished_at     timestamptz,
        queued_event    bigint,
        queued_at       timestamptz,
        started_event   bigint,
        started_at      timestamptz,
        completed_event bigint,
        signature       text NOT NULL DEFAULT '',
        each            text NOT NULL DEFAULT '',
        element         integer,
        item            bytea,
        elements        integer NOT NULL DEFAULT 0,
        next_element    integer NOT NULL DEFAULT 0,
        map_limit       integer NOT NULL DEFAULT 0,
        signal          bytea,
        CONSTRAINT dagen_tasks_pkey PRIMARY KEY (run_id, name)
    ) PARTITION BY RANGE (run_id);

    CREATE TABLE dagen_events (
        run_id  uuid NOT NULL,
        id      bigint NOT NULL DEFAULT nextval('dagen_event_seq'),
        at      timestamptz NOT NULL,
        task    text NOT NULL,
        type    text NOT NULL,
        attempt integer NOT NULL,
        detail  text NOT NULL DEFAULT '',
        CONSTRAINT dagen_events_pkey PRIMARY KEY (run_id, id)
    ) PARTITION BY RANGE (run_id);

    EXECUTE format('ALTER TABLE dagen_runs ATTACH PARTITION dagen_runs_p0 FOR VALUES FROM (MINVALUE) TO (%L)', bound);
    EXECUTE format('ALTER TABLE dagen_tasks ATTACH PARTITION dagen_tasks_p0 FOR VALUES FROM (MINVALUE) TO (%L)', bound);
    EXECUTE format('ALTER TABLE dagen_events ATTACH PARTITION dagen_events_p0 FOR VALUES FROM (MINVALUE) TO (%L)', bound);

    -- Storage settings are per partition: these are version 1's.
    CREATE TABLE dagen_runs_default PARTITION OF dagen_runs DEFAULT
        WITH (autovacuum_vacuum_scale_factor = 0.05, fillfactor = 80);
    CREATE TABLE dagen_tasks_default PARTITION OF dagen_tasks DEFAULT
        WITH (autovacuum_vacuum_scale_factor = 0.05, fillfactor = 50);
    CREATE TABLE dagen_events_default PARTITION OF dagen_events DEFAULT;

    INSERT INTO dagen_partitions (suffix, from_id, to_id)
    VALUES ('p0', '00000000-0000-0000-0000-000000000000', bound);
END
$$;
