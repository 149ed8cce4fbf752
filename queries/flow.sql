-- Concurrency caps and run deadlines (migration 006).

-- name: LockSlots :many
-- Creates or locks the slots of new capped runs, in (workflow, key) order
-- (as every writer of slots locks them, so they cannot deadlock), setting
-- each one's cap to the given one, and returns them.
INSERT INTO dagen_slots AS s (workflow, key, lim, running)
SELECT x.workflow, x.key, x.lim, 0
FROM (
    SELECT unnest(@workflows::text[]) AS workflow,
           unnest(@keys::text[]) AS key,
           unnest(@lims::integer[]) AS lim
) AS x
ORDER BY x.workflow, x.key
ON CONFLICT (workflow, key) DO UPDATE SET lim = excluded.lim
RETURNING s.workflow, s.key, s.lim, s.running;

-- name: LockSlotsForUpdate :many
-- Locks existing slots, in (workflow, key) order, and returns them.
SELECT s.workflow, s.key, s.lim, s.running
FROM dagen_slots s
JOIN (SELECT unnest(@workflows::text[]) AS workflow, unnest(@keys::text[]) AS key) AS x
  ON s.workflow = x.workflow AND s.key = x.key
ORDER BY s.workflow, s.key
FOR UPDATE OF s;

-- name: SlotsWaiting :many
-- The slots among these that have QUEUED runs. Sent after their locks are
-- taken, it sees every run queued by the transactions that held them.
SELECT x.workflow::text AS workflow, x.key::text AS key
FROM (SELECT unnest(@workflows::text[]) AS workflow, unnest(@keys::text[]) AS key) AS x
WHERE EXISTS (
    SELECT 1 FROM dagen_runs r WHERE r.queued AND r.workflow = x.workflow AND r.slot = x.key
);

-- name: SetSlots :exec
-- Writes the running counts of locked slots.
UPDATE dagen_slots s
SET running = x.running
FROM (
    SELECT unnest(@workflows::text[]) AS workflow,
           unnest(@keys::text[]) AS key,
           unnest(@runnings::integer[]) AS running
) AS x
WHERE s.workflow = x.workflow AND s.key = x.key;

-- name: PickQueued :many
-- The first QUEUED runs of each of these locked slots, up to its room (n),
-- in id order, locked. A run another transaction holds is skipped: that
-- one is cancelling it or failing it at its deadline (or refusing to retry
-- it, when the slots' sweep admits it later).
SELECT q.id, q.tenant, x.workflow::text AS workflow, x.key::text AS key
FROM (
    SELECT unnest(@workflows::text[]) AS workflow,
           unnest(@keys::text[]) AS key,
           unnest(@ns::integer[]) AS n
) AS x
CROSS JOIN LATERAL (
    SELECT r.id, r.tenant
    FROM dagen_runs r
    WHERE r.queued AND r.workflow = x.workflow AND r.slot = x.key AND r.status = 'QUEUED'
    ORDER BY r.id
    LIMIT x.n
    FOR UPDATE SKIP LOCKED
) AS q;

-- name: AdmitRuns :exec
UPDATE dagen_runs SET status = 'RUNNING', queued = false WHERE id = ANY(@ids::uuid[]);

-- name: QueueReady :many
-- Marks QUEUED the ready tasks of admitted runs (PENDING without pending
-- parents: the roots, or the tasks a retry reset), keeping their QUEUED
-- events in their rows, and returns them to enqueue.
UPDATE dagen_tasks t
SET status = 'QUEUED',
    queued_event = nextval('dagen_event_seq'),
    queued_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE t.run_id = ANY(@run_ids::uuid[])
  AND t.status = 'PENDING' AND t.pending_parents = 0 AND t.kind NOT IN ('onfailure', 'element')
RETURNING t.run_id, t.name, t.signature;

-- name: SlotsWithRoom :many
-- Slots with room and QUEUED runs: what an admission skipped (see
-- PickQueued), for the leader's sweep. Not locked.
SELECT s.workflow, s.key
FROM dagen_slots s
WHERE s.running < s.lim
  AND EXISTS (SELECT 1 FROM dagen_runs r WHERE r.queued AND r.workflow = s.workflow AND r.slot = s.key)
LIMIT @max;

-- name: LockIdleSlots :many
-- Locks slots no run holds, skipping those another transaction holds.
SELECT workflow, key FROM dagen_slots WHERE running = 0 LIMIT @max FOR UPDATE SKIP LOCKED;

-- name: DeleteSlots :exec
-- Deletes locked idle slots that no QUEUED run waits for. Sent after the
-- locks are taken, it sees the runs queued by the transactions that held
-- them.
DELETE FROM dagen_slots s
USING (SELECT unnest(@workflows::text[]) AS workflow, unnest(@keys::text[]) AS key) AS x
WHERE s.workflow = x.workflow AND s.key = x.key AND s.running = 0
  AND NOT EXISTS (SELECT 1 FROM dagen_runs r WHERE r.queued AND r.workflow = s.workflow AND r.slot = s.key);

-- name: InsertDeadlines :exec
-- The deadline timers of runs with a deadline.
INSERT INTO dagen_timers (run_id, task, attempt, wake_at, kind)
SELECT r.id, '@deadline', 0, r.deadline_at, 'deadline'
FROM dagen_runs r
WHERE r.id = ANY(@ids::uuid[]) AND r.deadline_at IS NOT NULL
ON CONFLICT (run_id, task) DO UPDATE
SET attempt = excluded.attempt, wake_at = excluded.wake_at, kind = excluded.kind;
