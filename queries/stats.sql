-- name: HotTablePages :one
-- The sizes on disk, in pages, of the tasks table, of the ready queue and
-- of the tenants' table. The tasks table is partitioned: its size is the
-- sum of its partitions'.
SELECT ((SELECT coalesce(sum(pg_relation_size(p.relid)), 0) FROM pg_partition_tree('dagen_tasks'::regclass) p)
        / current_setting('block_size')::bigint)::bigint AS tasks,
       (pg_relation_size('dagen_ready'::regclass) / current_setting('block_size')::bigint)::bigint AS ready,
       (pg_relation_size('dagen_tenant_groups'::regclass) / current_setting('block_size')::bigint)::bigint AS tenants;

-- name: UnderstatedRanges :many
-- The ranges of the history tables not yet ended by since_id (those new
-- runs go to) that hold min_pages pages or more while their statistics
-- say no rows (never analyzed, or analyzed empty: an ANALYZE that ran
-- while a creation was not yet committed counts its pages and none of its
-- rows), or half the pages they hold now or fewer, fewer than max_pages
-- (see rangeStatsPages), as names for ANALYZE.
SELECT c.oid::regclass::text AS name
FROM dagen_partitions p
CROSS JOIN unnest('{dagen_runs,dagen_tasks,dagen_events}'::text[]) AS h(name)
-- One lookup by oid a range (LIMIT 1 keeps it one: joined, the planner
-- hashed all of pg_class, which holds every table of the database).
CROSS JOIN LATERAL (
    SELECT k.oid, k.reltuples, k.relpages,
           pg_relation_size(k.oid) / current_setting('block_size')::bigint AS pages
    FROM pg_catalog.pg_class k
    WHERE k.oid = to_regclass(h.name || '_' || p.suffix)
    LIMIT 1
) AS c
WHERE p.to_id > sqlc.arg(since_id)::uuid
  AND c.pages >= sqlc.arg(min_pages)::integer
  AND (c.reltuples < 1 OR c.pages >= 2 * c.relpages::bigint AND c.relpages < sqlc.arg(max_pages)::integer)
ORDER BY 1;

-- name: AnalyzeHotTables :exec
-- Refreshes the planner's statistics of the tables that grow with the
-- work. It also invalidates the plans cached for them, so prepared
-- statements planned while the tables were nearly empty are planned again.
ANALYZE dagen_runs, dagen_tasks, dagen_ready, dagen_leases, dagen_events, dagen_tenant_groups;

-- name: AnalyzeQueueTables :exec
-- Like AnalyzeHotTables for the tables that grow with the queue alone:
-- cheaper, when only the queue grew.
ANALYZE dagen_ready, dagen_leases;

-- name: AnalyzeTenantTable :exec
-- Like AnalyzeHotTables for the tenants' table alone, when only it grew.
ANALYZE dagen_tenant_groups;
