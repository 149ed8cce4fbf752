-- name: Heartbeat :many
-- Records that a worker is alive until now + ttl, and returns which of its
-- runs were cancelled or no longer exist.
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
),
beat AS (
    INSERT INTO dagen_workers (id, heartbeat_at, alive_until)
    SELECT @worker::text, clock.now, clock.now + make_interval(secs => @ttl_seconds::float8)
    FROM clock
    ON CONFLICT (id) DO UPDATE
    SET heartbeat_at = excluded.heartbeat_at, alive_until = excluded.alive_until
)
SELECT x.id::uuid AS id
FROM (SELECT unnest(@run_ids::uuid[]) AS id) AS x
WHERE NOT EXISTS (
    SELECT 1 FROM dagen_runs r WHERE r.id = x.id AND r.status <> 'CANCELLED'
);

-- name: DeleteWorker :exec
DELETE FROM dagen_workers WHERE id = @id;

-- name: GrantAttempts :exec
-- Gives tasks released by a stopping worker back the attempt it used: a
-- released attempt does not count against max_attempts.
UPDATE dagen_tasks t
SET max_attempts = t.max_attempts + 1
FROM (SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@names::text[]) AS name) AS x
WHERE t.run_id = x.run_id AND t.name = x.name;
