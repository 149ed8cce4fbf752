-- Concurrency caps and run deadlines (migration 006).

-- name: LockSlots :exec
-- Creates or locks the slots of new capped runs, in (workflow, key) order
-- (as every writer of slots locks them, so they cannot deadlock), setting
-- each one's cap to the given one. A slot whose cap does not change is
-- locked and not written (ON CONFLICT locks every row it meets, the WHERE
-- only decides which it updates): a trigger of a key already known makes
-- no row version of its slot. SlotStates reads them after.
INSERT INTO dagen_slots AS s (workflow, key, lim, running)
SELECT x.workflow, x.key, x.lim, 0
FROM (
    SELECT unnest(@workflows::text[]) AS workflow,
           unnest(@keys::text[]) AS key,
           unnest(@lims::integer[]) AS lim
) AS x
ORDER BY x.workflow, x.key
ON CONFLICT (workflow, key) DO UPDATE SET lim = excluded.lim
WHERE s.lim <> excluded.lim;

-- name: LockSlotsForUpdate :exec
-- Locks existing slots, in (workflow, key) order.
SELECT s.workflow
FROM dagen_slots s
JOIN (SELECT unnest(@workflows::text[]) AS workflow, unnest(@keys::text[]) AS key) AS x
  ON s.workflow = x.workflow AND s.key = x.key
ORDER BY s.workflow, s.key
FOR UPDATE OF s;

-- name: SlotStates :many
-- The caps and running counts of slots the transaction locked (LockSlots),
-- and whether QUEUED runs wait for each. Sent after their locks are taken,
-- it sees every run queued by the transactions that held them. Each slot
-- is found by its key, whatever the estimates (as in AdmitQueued).
SELECT x.workflow::text AS workflow, x.key::text AS key, s.lim, s.running,
       EXISTS (
           SELECT 1 FROM dagen_run_queue q WHERE q.workflow = x.workflow AND q.slot = x.key
       )::boolean AS waiting
FROM (SELECT unnest(@workflows::text[]) AS workflow, unnest(@keys::text[]) AS key) AS x
CROSS JOIN LATERAL (
    SELECT s.lim, s.running FROM dagen_slots s
    WHERE s.workflow = x.workflow AND s.key = x.key
    LIMIT 1
) AS s;

-- name: SetSlots :exec
-- Writes the running counts of locked slots (the caller sends only those
-- that changed).
UPDATE dagen_slots s
SET running = x.running
FROM (
    SELECT unnest(@workflows::text[]) AS workflow,
           unnest(@keys::text[]) AS key,
           unnest(@runnings::integer[]) AS running
) AS x
WHERE s.workflow = x.workflow AND s.key = x.key;

-- name: AdmitQueued :many
-- Moves the running counts of locked slots by delta (runs that ended, or
-- were admitted by the caller), then admits each one's first QUEUED runs
-- into the room it has, in id order: they become RUNNING, count in
-- running, and their ready tasks (PENDING without pending parents: the
-- roots, or the tasks a retry reset) become QUEUED, keeping their QUEUED
-- events in their rows. It returns those tasks, to enqueue. A QUEUED run
-- another transaction holds is skipped (SKIP LOCKED): that one is
-- cancelling it or failing it at its deadline, or refusing to retry it or
-- finding a late result stale, when the leader's sweep admits it later.
-- The caller sent LockSlotsForUpdate first, so this statement's snapshot
-- has the slots' last counts.
WITH x AS (
    SELECT unnest(@workflows::text[]) AS workflow,
           unnest(@keys::text[]) AS key,
           unnest(@deltas::integer[]) AS delta
),
room AS (
    -- Each slot by its key, whatever the estimates of a table this
    -- churned: a join was planned as a hash of the whole table, whose
    -- row estimate, and the statement's cost with it, grew with its dead
    -- rows past the point where Postgres JIT-compiles it (see
    -- docs/performance.md, "No JIT compilation of large batches").
    SELECT x.workflow, x.key, s.slot_ctid, greatest(s.running + x.delta, 0) AS running,
           greatest(s.lim - greatest(s.running + x.delta, 0), 0) AS n
    FROM x
    CROSS JOIN LATERAL (
        SELECT s.ctid::tid AS slot_ctid, s.lim, s.running FROM dagen_slots s
        WHERE s.workflow = x.workflow AND s.key = x.key
        LIMIT 1
    ) AS s
),
picked AS (
    -- Each slot's admitted runs as arrays in its one row, so that counting
    -- them needs no join back to the slots: joined with the picks grouped
    -- by slot, the planner (taking both for the ten rows of its guess)
    -- rescanned the groups once a slot, a cost that grew with the square
    -- of the slots an admission serves (see docs/performance.md,
    -- "Admissions grow with the runs they admit, not with the backlog").
    SELECT room.slot_ctid, room.running + coalesce(cardinality(q.ids), 0)::integer AS running, q.ids, q.queue_ctids
    FROM room
    CROSS JOIN LATERAL (
        SELECT array_agg(x.id) AS ids, array_agg(x.queue_ctid) AS queue_ctids
        FROM (
            SELECT r.id, w.ctid::tid AS queue_ctid
            FROM dagen_run_queue w
            JOIN dagen_runs r ON r.id = w.run_id
            WHERE w.workflow = room.workflow AND w.slot = room.key AND r.status = 'QUEUED'
            ORDER BY w.run_id
            LIMIT room.n
            FOR UPDATE OF r SKIP LOCKED
        ) AS x
    ) AS q
),
dequeued AS (
    -- By the rows' places, as picked found them: a join with the whole
    -- queue hashed the backlog at each admission. A run's place moves
    -- only with its run's lock, which picked holds.
    DELETE FROM dagen_run_queue w
    WHERE w.ctid = ANY(ARRAY(SELECT unnest(picked.queue_ctids) FROM picked))
),
admitted AS (
    -- By key: joined with picked, the runs were hashed whole, a scan
    -- that grew with the backlog at every admission.
    UPDATE dagen_runs r
    SET status = 'RUNNING'
    WHERE r.id = ANY(ARRAY(SELECT unnest(picked.ids) FROM picked))
    RETURNING r.id
),
counted AS (
    -- By the slots' places too (the caller holds their locks). A slot
    -- whose ended run handed its place to the next is left as it is: no
    -- row version for a count that did not change.
    UPDATE dagen_slots s
    SET running = picked.running
    FROM picked
    WHERE s.ctid = ANY(ARRAY(SELECT picked.slot_ctid FROM picked)) AND s.ctid = picked.slot_ctid
      AND s.running <> picked.running
),
queued AS (
    -- By key too, for the same reason.
    UPDATE dagen_tasks t
    SET status = 'QUEUED',
        queued_event = nextval('dagen_event_seq'),
        queued_at = coalesce(sqlc.narg('now')::timestamptz, now())
    WHERE t.run_id = ANY(ARRAY(SELECT id FROM admitted))
      AND t.status = 'PENDING' AND t.pending_parents = 0 AND t.kind NOT IN ('onfailure', 'element')
    RETURNING t.run_id, t.name, t.signature,
              (t.rate_limit IS NOT NULL AND t.kind <> 'map')::boolean AS rated, t.ctid::tid AS row_ctid
)
-- With @ahead, whether each task's tenant may have it skip the fair queue,
-- as TenantsAhead reads it: a completion that admitted the run may start
-- its ready steps for its worker (CompleteAndContinue). The frontier is a
-- scalar subquery, as in Enqueue, so that it is costed as the one row it is.
-- Each task's run is looked up by key (its row as the statement found
-- it: these columns do not change), not joined with admitted, which the
-- planner could rescan once a task.
SELECT queued.run_id, queued.name, queued.signature, a.workflow, a.tenant, coalesce(a.trace_parent, '')::text AS trace_parent, queued.rated, queued.row_ctid,
       (@ahead::boolean AND NOT queued.rated AND coalesce((
           SELECT g.block_ptr <= f.block + 1 OR NOT EXISTS (
                      SELECT 1 FROM dagen_ready q
                      WHERE q.id >= f.block * 1048576 AND q.id < (f.block + 2) * 1048576
                        AND q.id % 1048576 <> g.group_id
                  )
           FROM dagen_tenant_groups g,
                LATERAL (SELECT (SELECT block FROM dagen_queue_frontier) AS block) AS f
           WHERE g.tenant = a.tenant
       ), true))::boolean AS may_go
FROM queued
CROSS JOIN LATERAL (
    SELECT r.workflow, r.tenant, r.trace_parent FROM dagen_runs r WHERE r.id = queued.run_id LIMIT 1
) AS a;

-- name: SlotsWithRoom :many
-- Slots with room and QUEUED runs: what an admission skipped (see
-- AdmitQueued), for the leader's sweep. Not locked.
SELECT s.workflow, s.key
FROM dagen_slots s
WHERE s.running < s.lim
  AND EXISTS (SELECT 1 FROM dagen_run_queue q WHERE q.workflow = s.workflow AND q.slot = s.key)
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
  AND NOT EXISTS (SELECT 1 FROM dagen_run_queue q WHERE q.workflow = s.workflow AND q.slot = s.key);

-- name: InsertDeadlines :exec
-- The deadline timers of runs with a deadline.
INSERT INTO dagen_timers (run_id, task, attempt, wake_at, kind)
SELECT r.id, '@deadline', 0, r.deadline_at, 'deadline'
FROM dagen_runs r
WHERE r.id = ANY(@ids::uuid[]) AND r.deadline_at IS NOT NULL
ON CONFLICT (run_id, task) DO UPDATE
SET attempt = excluded.attempt, wake_at = excluded.wake_at, kind = excluded.kind;

-- name: QueueRuns :exec
-- Puts QUEUED runs in their slots' queues.
INSERT INTO dagen_run_queue (workflow, slot, run_id)
SELECT unnest(@workflows::text[]), unnest(@slots::text[]), unnest(@ids::uuid[]);

-- name: DequeueRuns :exec
-- Takes QUEUED runs that ended (cancelled, timed out) out of their slots'
-- queues. The caller holds the runs' locks.
DELETE FROM dagen_run_queue q
USING (SELECT unnest(@workflows::text[]) AS workflow, unnest(@slots::text[]) AS slot, unnest(@ids::uuid[]) AS run_id) AS x
WHERE q.workflow = x.workflow AND q.slot = x.slot AND q.run_id = x.run_id;
