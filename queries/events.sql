-- name: InsertEvents :exec
INSERT INTO dagen_events (run_id, at, task, type, attempt, detail)
SELECT e.run_id, coalesce(sqlc.narg('at')::timestamptz, now()), e.task, e.type, e.attempt, e.detail
FROM (
    SELECT unnest(@run_ids::uuid[]) AS run_id,
           unnest(@tasks::text[]) AS task,
           unnest(@types::text[]) AS type,
           unnest(@attempts::integer[]) AS attempt,
           unnest(@details::text[]) AS detail
) AS e;

-- name: ListEvents :many
SELECT at, task, type, attempt, detail
FROM dagen_events
WHERE run_id = @run_id
ORDER BY id;
