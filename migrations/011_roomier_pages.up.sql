-- dagen schema, version 11: room on every page for the updates a run's rows
-- take.
--
-- A run's row is written once more when it finishes (UpdateRuns), and a
-- task's row when it is claimed and again when it completes. The rows of a
-- page were made together, so one statement updates most of them. An
-- update stays HOT (no new index entries; the runs have four indexes) only
-- while the new version fits on its page, and a finished run's row is
-- about 16 bytes longer than a new one's. So the runs get fillfactor 45
-- and the tasks 35 (they had 80 and 50), which leaves room for nearly
-- every update to stay HOT, where fuller pages left a good share of them
-- non-HOT (see docs/performance.md, "Room on every page for HOT
-- updates").
--
-- The ranges the leader makes from this version have these settings
-- (pgstore, internal/maintenance/partitions.go); this gives them to the ranges that exist, for
-- the rows inserted from now on (ALTER … SET takes SHARE UPDATE EXCLUSIVE:
-- the engine's reads and writes go on).

DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT c.oid::regclass AS range, p.relname AS parent
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent
        WHERE i.inhparent IN ('dagen_runs'::regclass, 'dagen_tasks'::regclass)
    LOOP
        EXECUTE format('ALTER TABLE %s SET (fillfactor = %s)', r.range,
                       CASE r.parent WHEN 'dagen_runs' THEN 45 ELSE 35 END);
    END LOOP;
END
$$;
