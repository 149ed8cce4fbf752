-- dagen schema, version 3: indexes for operators' lists of runs (see
-- store.Operator). Lists are newest first by id (UUIDv7: creation order),
-- so each index ends with id, and a filtered page, first or later, is one
-- backward range scan that stops after its LIMIT rows.
--
-- Each index costs a run's insert one more entry. None covers a column
-- that changes after the insert (status, pending, finished_at, failure_*):
-- an index on status made the update that finishes a run non-HOT, adding
-- an entry to every index of the table once a run, which cost Postgres CPU
-- at every step (see docs/performance.md, "Operators' indexes leave
-- status out"). Status filters are applied on these scans instead; a
-- status-first list for operators will come from a side table written
-- only for runs that end FAILED or CANCELLED.

-- `dagen runs ls -workflow W`: a workflow's runs, newest first.
CREATE INDEX dagen_runs_workflow_idx ON dagen_runs (workflow, id DESC);

-- `dagen runs ls -tenant T`: a tenant's runs, newest first.
CREATE INDEX dagen_runs_tenant_idx ON dagen_runs (tenant, id DESC);

-- Which worker took the leader lock last (store.LeaderNamer), for the
-- workers' view: the advisory lock itself does not say whose it is. One row.
CREATE TABLE dagen_leader (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    worker    text NOT NULL,
    since     timestamptz NOT NULL
);
