-- name: TasksTablePages :one
-- The size of the tasks table on disk, in pages.
SELECT (pg_relation_size('dagen_tasks'::regclass) / current_setting('block_size')::bigint)::bigint AS pages;

-- name: AnalyzeHotTables :exec
-- Refreshes the planner's statistics of the tables that grow with the
-- work. It also invalidates the plans cached for them, so prepared
-- statements planned while the tables were nearly empty are planned again.
ANALYZE dagen_runs, dagen_tasks, dagen_ready, dagen_leases, dagen_events;
