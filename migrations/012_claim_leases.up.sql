-- dagen schema, version 12: one lease per claim instead of one per task.
--
-- A lease was a row per running task: every step inserted one when it was
-- claimed and deleted it when it ended, two of the ten row writes a
-- single-step run makes, and a noticeable part of a step's CPU, worker's
-- and Postgres's (see docs/performance.md, "One lease per claim"). Every
-- task of one claim gets the same lease, so a claim (ClaimTasks,
-- ContinueTasks, a StartRuns that starts roots) now writes one
-- row that lists its tasks, each with the STARTED event id of its attempt
-- (dagen_tasks.started_event). A task holds the lease while it is RUNNING
-- at that attempt; an entry whose task moved on is dead weight, never a
-- claim on anything.
--
-- Nobody deletes an entry. The claiming process deletes the row once it has
-- committed the end of every attempt in it (pgstore's lease book, internal/leasebook), in the
-- next transaction it writes; the leader deletes a row whose lease expired
-- once no task holds it, after rescuing the tasks that did. A row's id is
-- the least STARTED event id in it.
--
-- Workers of an earlier version cannot claim against this table: their
-- claims fail, whole, until they run this version.

CREATE TABLE dagen_leases_v12 (
    id          bigint PRIMARY KEY,
    worker      text NOT NULL,
    lease_until timestamptz NOT NULL,
    run_ids     uuid[] NOT NULL,
    tasks       text[] NOT NULL,
    events      bigint[] NOT NULL
);

INSERT INTO dagen_leases_v12 (id, worker, lease_until, run_ids, tasks, events)
SELECT l.id, l.worker, l.lease_until, ARRAY[l.run_id], ARRAY[l.task], ARRAY[l.id]
FROM dagen_leases l;

DROP TABLE dagen_leases;
ALTER TABLE dagen_leases_v12 RENAME TO dagen_leases;
ALTER INDEX dagen_leases_v12_pkey RENAME TO dagen_leases_pkey;
ALTER TABLE dagen_leases SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);

-- A claim of 512 tasks lists 15 kB, which goes out of line (TOAST). Left
-- to try compression first, Postgres spent time at every claim on lists of
-- random ids that do not compress; stored as they are, they cost far less
-- (see docs/performance.md, "One lease per claim").
ALTER TABLE dagen_leases
    ALTER COLUMN run_ids SET STORAGE EXTERNAL,
    ALTER COLUMN tasks SET STORAGE EXTERNAL,
    ALTER COLUMN events SET STORAGE EXTERNAL;
