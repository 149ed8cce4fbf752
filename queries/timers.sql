-- name: UpsertTimers :exec
-- A timer is set by an attempt, and fires for that attempt of that claim
-- only (migration 014).
INSERT INTO dagen_timers (run_id, task, attempt, claim, wake_at, kind)
SELECT t.run_id, t.task, t.attempt, t.claim, t.wake_at, t.kind
FROM (
    SELECT unnest(@run_ids::uuid[]) AS run_id,
           unnest(@tasks::text[]) AS task,
           unnest(@attempts::integer[]) AS attempt,
           unnest(@claims::bigint[]) AS claim,
           unnest(@wake_ats::timestamptz[]) AS wake_at,
           unnest(@kinds::text[]) AS kind
) AS t
ON CONFLICT (run_id, task) DO UPDATE
SET attempt = excluded.attempt, claim = excluded.claim, wake_at = excluded.wake_at, kind = excluded.kind;

-- name: DueTimers :many
-- Timers due on the store's clock, earliest first. Read without locks: the
-- caller locks the timers' runs, then takes the timers with TakeTimers.
SELECT run_id, task, coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
FROM dagen_timers
WHERE wake_at <= coalesce(sqlc.narg('now')::timestamptz, now())
ORDER BY wake_at
LIMIT @max;

-- name: TakeTimers :many
-- Deletes due timers of runs the caller has locked. Only the transaction
-- whose DELETE returns a timer fires it, so each fires exactly once.
DELETE FROM dagen_timers t
USING (SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@tasks::text[]) AS task) AS k
WHERE t.run_id = k.run_id AND t.task = k.task AND t.wake_at <= @now::timestamptz
RETURNING t.run_id, t.task, t.attempt, t.claim, t.kind;

-- name: DeleteTimersForRuns :exec
DELETE FROM dagen_timers WHERE run_id = ANY(@run_ids::uuid[]);

-- name: NextTimer :one
SELECT min(wake_at)::timestamptz AS wake_at FROM dagen_timers;
