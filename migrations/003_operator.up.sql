-- dagen schema, version 3: indexes for operators' lists of runs (see
-- store.Operator). Lists are newest first by id (UUIDv7: creation order),
-- so each index ends with id, and a filtered page, first or later, is one
-- backward range scan that stops after its LIMIT rows.
--
-- Each index costs a run's insert one more entry. None covers pending or
-- finished_at, which change as the run's tasks finish: those updates stay
-- HOT (see 001_init.up.sql). status changes once, when the run finishes,
-- which then adds an entry to every index of the run: once a run.

-- `dagen runs ls -workflow W`: a workflow's runs, newest first.
CREATE INDEX dagen_runs_workflow_idx ON dagen_runs (workflow, id DESC);

-- A workflow's runs in some statuses: `dagen runs ls -workflow W -status
-- FAILED`, CancelRuns by workflow (its RUNNING runs, oldest first) and
-- CountRuns by workflow (an index-only scan). Without it such a page walks
-- the workflow's runs, or the status's, past every one that does not match:
-- the whole table when none does.
CREATE INDEX dagen_runs_workflow_status_idx ON dagen_runs (workflow, status, id DESC);

-- `dagen runs ls -tenant T`: a tenant's runs, newest first.
CREATE INDEX dagen_runs_tenant_idx ON dagen_runs (tenant, id DESC);

-- `dagen runs ls -status S` (newest first) and CancelRuns, which walks the
-- RUNNING runs oldest first; also the counts by status. Most runs are
-- finished, so a list of RUNNING or FAILED runs must not walk past them.
CREATE INDEX dagen_runs_status_idx ON dagen_runs (status, id DESC);
