-- Operators' queries (store.Operator). Every filter is optional: a NULL
-- (or empty array) matches every run. Callers run PlanEachExecution first
-- in the same transaction, so each execution is planned for its filters
-- (a generic plan cannot pick the index of the filter that is set).

-- name: ListRuns :many
-- A page of runs matching the filters, newest first, older than after.
SELECT r.id, r.workflow, r.tenant, r.status, r.failure_step, r.failure_attempt,
       r.failure_message, r.created_at, r.finished_at
FROM dagen_runs r
WHERE (sqlc.narg('workflow')::text IS NULL OR r.workflow = sqlc.narg('workflow')::text)
  AND (sqlc.narg('tenant')::text IS NULL OR r.tenant = sqlc.narg('tenant')::text)
  AND (cardinality(@statuses::text[]) = 0 OR r.status = ANY(@statuses::text[]))
  AND (sqlc.narg('created_from')::timestamptz IS NULL OR r.created_at >= sqlc.narg('created_from')::timestamptz)
  AND (sqlc.narg('created_to')::timestamptz IS NULL OR r.created_at < sqlc.narg('created_to')::timestamptz)
  AND (sqlc.narg('children')::text IS NULL OR (sqlc.narg('children')::text = 'only') = (r.parent_run IS NOT NULL))
  AND (sqlc.narg('after')::uuid IS NULL OR r.id < sqlc.narg('after')::uuid)
ORDER BY r.id DESC
LIMIT @max;

-- name: CountRuns :many
-- The runs matching the filters, counted by status.
SELECT r.status, count(*) AS n
FROM dagen_runs r
WHERE (sqlc.narg('workflow')::text IS NULL OR r.workflow = sqlc.narg('workflow')::text)
  AND (sqlc.narg('tenant')::text IS NULL OR r.tenant = sqlc.narg('tenant')::text)
  AND (cardinality(@statuses::text[]) = 0 OR r.status = ANY(@statuses::text[]))
  AND (sqlc.narg('created_from')::timestamptz IS NULL OR r.created_at >= sqlc.narg('created_from')::timestamptz)
  AND (sqlc.narg('created_to')::timestamptz IS NULL OR r.created_at < sqlc.narg('created_to')::timestamptz)
  AND (sqlc.narg('children')::text IS NULL OR (sqlc.narg('children')::text = 'only') = (r.parent_run IS NOT NULL))
GROUP BY r.status;

-- name: RunningRunIDs :many
-- QUEUED and RUNNING runs matching the filters, oldest first, newer than after: the
-- candidates of a CancelRuns batch, read without locks (LockRuns then
-- locks them in id order and rechecks their status).
SELECT r.id
FROM dagen_runs r
WHERE r.status IN ('QUEUED', 'RUNNING')
  AND (sqlc.narg('workflow')::text IS NULL OR r.workflow = sqlc.narg('workflow')::text)
  AND (sqlc.narg('tenant')::text IS NULL OR r.tenant = sqlc.narg('tenant')::text)
  AND (sqlc.narg('created_from')::timestamptz IS NULL OR r.created_at >= sqlc.narg('created_from')::timestamptz)
  AND (sqlc.narg('created_to')::timestamptz IS NULL OR r.created_at < sqlc.narg('created_to')::timestamptz)
  AND (sqlc.narg('children')::text IS NULL OR (sqlc.narg('children')::text = 'only') = (r.parent_run IS NOT NULL))
  AND (sqlc.narg('after')::uuid IS NULL OR r.id > sqlc.narg('after')::uuid)
ORDER BY r.id
LIMIT @max;

-- name: ListWorkers :many
-- Every worker record, by id.
SELECT w.id, w.heartbeat_at, w.alive_until, w.signatures, w.concurrency,
       (w.alive_until > coalesce(sqlc.narg('now')::timestamptz, now()))::boolean AS alive,
       EXISTS (SELECT 1 FROM dagen_leader l WHERE l.worker = w.id)::boolean AS named_leader
FROM dagen_workers w
ORDER BY w.id;

-- name: Backlog :many
-- Unfinished tasks per tenant, workflow and state, from the tables that
-- hold only them: the ready queue (QUEUED), the leases (RUNNING: the
-- tasks they list that still hold them) and the timers (SLEEPING, BACKOFF;
-- not deadlines, nor the ends of signal waits, which wait for no worker).
-- Only the leases' tasks are looked up in the history, one key each. The
-- oldest queue entry's age is the ready queue's own (migration 019).
SELECT r.tenant, r.workflow, x.state, count(*)::integer AS n,
       coalesce(extract(epoch FROM now() - min(x.enqueued_at)), 0)::float8 AS oldest_seconds
FROM (
    SELECT q.run_id, 'QUEUED' AS state, q.enqueued_at FROM dagen_ready q
    UNION ALL
    SELECT e.run_id, 'RUNNING', NULL::timestamptz
    FROM dagen_leases l
    CROSS JOIN LATERAL (
        SELECT l.run_ids[i.i] AS run_id, l.tasks[i.i] AS task, l.events[i.i] AS event
        FROM generate_subscripts(l.events, 1) AS i(i)
    ) AS e
    -- A lease lists the tasks of its claim, some of which may have ended:
    -- those that hold it are RUNNING at its attempt (one lookup each).
    WHERE EXISTS (
        SELECT 1 FROM dagen_tasks t
        WHERE t.run_id = e.run_id AND t.name = e.task AND t.status = 'RUNNING' AND t.started_event = e.event
    )
    UNION ALL
    SELECT t.run_id, CASE t.kind WHEN 'sleep' THEN 'SLEEPING' ELSE 'BACKOFF' END, NULL::timestamptz FROM dagen_timers t
    WHERE t.kind IN ('sleep', 'retry')
) AS x
JOIN dagen_runs r ON r.id = x.run_id
WHERE r.status IN ('QUEUED', 'RUNNING')
GROUP BY r.tenant, r.workflow, x.state
ORDER BY r.tenant, r.workflow, x.state;

-- name: QueuePlaces :many
-- Where the run's named tasks stand in the fair queue: how many queued
-- tasks have a lower id (the claim order), and how many of them are the
-- same tenant's, each counted up to @most. A tenant has at most one task
-- a block (id = group + 1048576 * block), so its tasks ahead are found by
-- probing the primary key at the @most blocks before this one: a bounded
-- number of lookups however deep the queue.
SELECT r.task,
       (SELECT count(*) FROM (SELECT 1 FROM dagen_ready a WHERE a.id < r.id LIMIT @most::integer) AS x)::integer AS ahead,
       (SELECT count(*) FROM dagen_ready a
        WHERE a.id IN (SELECT r.id - 1048576 * k FROM generate_series(1, LEAST(@most::integer, r.id / 1048576)) AS k))::integer AS tenant_ahead
FROM dagen_ready r
WHERE r.run_id = @run_id AND r.task = ANY(@tasks::text[]);
