-- name: Heartbeat :many
-- Records that a worker is alive until now + ttl, and returns which of its
-- runs were cancelled, timed out or no longer exist.
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
    SELECT 1 FROM dagen_runs r
    WHERE r.id = x.id AND r.status <> 'CANCELLED'
      AND NOT (r.status = 'FAILED' AND r.failure_step = '@deadline')
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

-- name: NotHeldTasks :many
-- The running tasks leased to a worker, claimed before now - ttl, whose
-- attempts the worker does not hold (none of @held has its claim token,
-- migration 014): the answer to their claim never reached it, or it
-- finished them and the database lost their results with a rolled-back
-- history. The token alone names an attempt: it is random, and differs
-- between any two claims. dagen_leases holds only the leases of claims
-- whose tasks may still run; the worker's are few. Each entry's task is
-- found by its key (LIMIT 1 keeps it one lookup: joined, the planner
-- hashed the leases and read every range of the tasks table at each
-- heartbeat; see docs/performance.md, "Worker rounds find tasks by key"),
-- and the held tokens are hashed (NOT IN a subquery) rather than compared
-- one by one per entry.
SELECT e.run_id::uuid AS run_id, e.task::text AS name, t.claim::bigint AS claim
FROM dagen_leases l
CROSS JOIN LATERAL (
    SELECT l.run_ids[i.i] AS run_id, l.tasks[i.i] AS task, l.events[i.i] AS event
    FROM generate_subscripts(l.events, 1) AS i(i)
) AS e
CROSS JOIN LATERAL (
    SELECT t.status, t.claim, t.started_event, t.started_at FROM dagen_tasks t
    WHERE t.run_id = e.run_id AND t.name = e.task
    LIMIT 1
) t
WHERE l.worker = @worker
  AND t.claim NOT IN (SELECT unnest(@held::bigint[]))
  AND t.status = 'RUNNING' AND t.started_event = e.event
  AND t.started_at < coalesce(sqlc.narg('now')::timestamptz, now()) - make_interval(secs => @ttl_seconds::float8);
