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
