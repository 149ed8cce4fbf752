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
-- Timers due on the store's clock, earliest first, and the rate limits'
-- buckets due a look (migration 020: rate_limit set, run_id not). Read
-- without locks: the caller locks the timers' runs, then takes the timers
-- with TakeTimers, or admits for the buckets (LockBuckets).
SELECT d.run_id, coalesce(d.task, '')::text AS task, d.rate_limit, d.rate_key, coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
FROM (
    (SELECT t.run_id, t.task, NULL::text AS rate_limit, NULL::text AS rate_key, t.wake_at
     FROM dagen_timers t
     WHERE t.wake_at <= coalesce(sqlc.narg('now')::timestamptz, now())
     ORDER BY t.wake_at
     LIMIT @max)
    UNION ALL
    (SELECT NULL::uuid, ''::text, w.rate_limit, w.rate_key, w.wake_at
     FROM dagen_rate_wakes w
     WHERE w.wake_at <= coalesce(sqlc.narg('now')::timestamptz, now())
     ORDER BY w.wake_at
     LIMIT @max)
) AS d
ORDER BY d.wake_at
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
-- The earliest timer, or bucket due a look.
SELECT least((SELECT min(t.wake_at) FROM dagen_timers t),
             (SELECT min(w.wake_at) FROM dagen_rate_wakes w))::timestamptz AS wake_at;
