-- dagen schema, version 10: every run id in a range; no default partitions.
--
-- Version 9 sent ids that no range held to DEFAULT partitions. That made
-- the ranges costly to keep: while a default partition exists, adding a
-- range (CREATE TABLE … PARTITION OF) locks the parent tables ACCESS
-- EXCLUSIVE and scans the default partition, and a range cannot be
-- detached CONCURRENTLY. Under load the leader's 200 ms lock timeout
-- expired at every round, the ranges ran out, new runs went to the default
-- partitions, and the plans the sessions had cached for them while they
-- were empty read them whole.
--
-- From this version a range is made by creating a table and attaching it
-- (SHARE UPDATE EXCLUSIVE on the parent: the engine's reads and writes go
-- on) and dropped by detaching it CONCURRENTLY first. An id no range holds
-- makes the insert of its run fail, and the store makes a range for it and
-- inserts again (pgstore, internal/maintenance/partitions.go). dropping marks a range whose
-- detach has begun: a retry refuses its runs, and the leader finishes the
-- drop, or attaches the range again when a run came into it late.
--
-- The rows of the default partitions move to ranges: when every one lies
-- between the same two ranges (always, when version 9 ran with pruning by
-- partition off), the default tables become that range in place, without
-- copying a row; otherwise ranges are made over the gaps that hold them and
-- the rows are copied in.

ALTER TABLE dagen_partitions ADD COLUMN dropping boolean NOT NULL DEFAULT false;

DO $$
DECLARE
    g record;
    gaps integer;
    sfx text;
    lo uuid;
    hi uuid;
BEGIN
    ALTER TABLE dagen_runs DETACH PARTITION dagen_runs_default;
    ALTER TABLE dagen_tasks DETACH PARTITION dagen_tasks_default;
    ALTER TABLE dagen_events DETACH PARTITION dagen_events_default;

    -- The gaps between ranges that hold ids of the default tables: each as
    -- the millisecond of its first id and the one past its last. A range's
    -- bounds are whole milliseconds, so [first, last+1) stays in the gap.
    -- (A uuid's text sorts as the uuid does; min and max take no uuid.)
    CREATE TEMPORARY TABLE dagen_gaps ON COMMIT DROP AS
    WITH ids AS (
        SELECT id FROM dagen_runs_default
        UNION ALL SELECT run_id FROM dagen_tasks_default
        UNION ALL SELECT run_id FROM dagen_events_default
    ), placed AS (
        SELECT ids.id,
               (SELECT p.to_id FROM dagen_partitions p WHERE p.to_id <= ids.id ORDER BY p.to_id DESC LIMIT 1) AS after
        FROM ids
    )
    SELECT ('x' || left(replace(min(id::text), '-', ''), 12))::bit(48)::bigint AS from_ms,
           ('x' || left(replace(max(id::text), '-', ''), 12))::bit(48)::bigint + 1 AS to_ms
    FROM placed
    GROUP BY after;

    SELECT count(*) INTO gaps FROM dagen_gaps;
    IF gaps = 0 THEN
        DROP TABLE dagen_runs_default, dagen_tasks_default, dagen_events_default;
        RETURN;
    END IF;

    FOR g IN SELECT * FROM dagen_gaps ORDER BY from_ms LOOP
        -- The suffix and bounds the store gives a range (pgstore, internal/maintenance/partitions.go).
        sfx := 'p' || to_char(to_timestamp(g.from_ms / 1000) AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS')
               || '_' || lpad((g.from_ms % 1000)::text, 3, '0');
        lo := (substr(lpad(to_hex(g.from_ms), 12, '0'), 1, 8) || '-' || substr(lpad(to_hex(g.from_ms), 12, '0'), 9, 4)
               || '-0000-0000-000000000000')::uuid;
        hi := (substr(lpad(to_hex(g.to_ms), 12, '0'), 1, 8) || '-' || substr(lpad(to_hex(g.to_ms), 12, '0'), 9, 4)
               || '-0000-0000-000000000000')::uuid;
        IF gaps = 1 THEN
            -- In place: the default tables become the range.
            EXECUTE format('ALTER TABLE dagen_runs_default RENAME TO %I', 'dagen_runs_' || sfx);
            EXECUTE format('ALTER TABLE dagen_tasks_default RENAME TO %I', 'dagen_tasks_' || sfx);
            EXECUTE format('ALTER TABLE dagen_events_default RENAME TO %I', 'dagen_events_' || sfx);
        ELSE
            EXECUTE format('CREATE TABLE %I (LIKE dagen_runs INCLUDING ALL) WITH (autovacuum_vacuum_scale_factor = 0.05, fillfactor = 80)', 'dagen_runs_' || sfx);
            EXECUTE format('CREATE TABLE %I (LIKE dagen_tasks INCLUDING ALL) WITH (autovacuum_vacuum_scale_factor = 0.05, fillfactor = 50)', 'dagen_tasks_' || sfx);
            EXECUTE format('CREATE TABLE %I (LIKE dagen_events INCLUDING ALL)', 'dagen_events_' || sfx);
        END IF;
        EXECUTE format('ALTER TABLE dagen_runs ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', 'dagen_runs_' || sfx, lo, hi);
        EXECUTE format('ALTER TABLE dagen_tasks ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', 'dagen_tasks_' || sfx, lo, hi);
        EXECUTE format('ALTER TABLE dagen_events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', 'dagen_events_' || sfx, lo, hi);
        INSERT INTO dagen_partitions (suffix, from_id, to_id) VALUES (sfx, lo, hi);
    END LOOP;

    IF gaps > 1 THEN
        INSERT INTO dagen_runs SELECT * FROM dagen_runs_default;
        INSERT INTO dagen_tasks SELECT * FROM dagen_tasks_default;
        INSERT INTO dagen_events SELECT * FROM dagen_events_default;
        DROP TABLE dagen_runs_default, dagen_tasks_default, dagen_events_default;
    END IF;
END
$$;
