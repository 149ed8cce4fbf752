-- name: InsertRuns :exec
-- Inserts new runs; an id that exists already violates dagen_runs_pkey.
-- A capped run (capped) has its slot (a QUEUED one is queued by
-- QueueRuns); a timeout
-- (in ms, 0 for none) sets the deadline.
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
)
INSERT INTO dagen_runs (id, workflow, fingerprint, tenant, status, input, pending, created_at,
                        slot, timeout_ms, deadline_at, trace_parent, priority)
SELECT r.id, r.workflow, r.fingerprint, r.tenant, r.status, r.input, r.pending, clock.now,
       CASE WHEN r.capped THEN r.slot END,
       nullif(r.timeout_ms, 0), CASE WHEN r.timeout_ms > 0 THEN clock.now + r.timeout_ms * interval '1 millisecond' END,
       nullif(r.trace_parent, ''), r.priority
FROM clock, (
    SELECT unnest(@ids::uuid[]) AS id,
           unnest(@workflows::text[]) AS workflow,
           unnest(@fingerprints::text[]) AS fingerprint,
           unnest(@tenants::text[]) AS tenant,
           unnest(@inputs::bytea[]) AS input,
           unnest(@pendings::integer[]) AS pending,
           unnest(@statuses::text[]) AS status,
           unnest(@capped::boolean[]) AS capped,
           unnest(@slots::text[]) AS slot,
           unnest(@timeout_ms::bigint[]) AS timeout_ms,
           unnest(@trace_parents::text[]) AS trace_parent,
           unnest(@priorities::smallint[]) AS priority
) AS r;

-- name: LockRuns :many
-- Locks runs in id order (the first lock every writing transaction takes,
-- so writers cannot deadlock) and reads the transaction's clock. The ids
-- come sorted, without repeats; each is one lookup of the primary key, in
-- their order (a subquery with a locking clause stays a lookup a row of
-- the ids). Joined by key, each lookup reads only the range (partition)
-- that can hold the id: = ANY(…) probed the index of every range, the
-- ranges made ahead included, for every id. A run's input is returned when
-- it has @max_input bytes or fewer (in the row: no more pages read), for
-- the steps a continuation starts.
--
-- No LIMIT in the lookup: with one, Postgres 15 returned no row for a run
-- in another range than the run before it once the lock had waited for a
-- writer of the run (the recheck of the row it then locked found nothing),
-- and the batch took the run for gone (TestCompletionsLockRunsAcrossRanges).
SELECT r.id, r.workflow, r.tenant, r.status, r.pending, r.slot, coalesce(r.timeout_ms, 0)::bigint AS timeout_ms,
       (r.deadline_at IS NOT NULL)::boolean AS has_deadline,
       (CASE WHEN octet_length(r.input) <= @max_input::integer THEN r.input END)::bytea AS input,
       coalesce(r.trace_parent, '')::text AS trace_parent,
       (r.parent_run IS NOT NULL)::boolean AS has_parent,
       coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
FROM unnest((SELECT @ids::uuid[])) WITH ORDINALITY AS k(id, ord)
CROSS JOIN LATERAL (
    SELECT d.id, d.workflow, d.tenant, d.status, d.pending, d.slot, d.timeout_ms, d.deadline_at, d.input, d.trace_parent, d.parent_run
    FROM dagen_runs d WHERE d.id = k.id
    FOR NO KEY UPDATE
) AS r
ORDER BY k.ord;

-- name: LockRunsSkipLocked :many
-- Like LockRuns (no LIMIT either: see there), but skips runs another
-- transaction holds.
SELECT r.id, r.workflow, r.tenant, r.status, r.pending, r.slot, coalesce(r.timeout_ms, 0)::bigint AS timeout_ms,
       (r.deadline_at IS NOT NULL)::boolean AS has_deadline,
       (CASE WHEN octet_length(r.input) <= @max_input::integer THEN r.input END)::bytea AS input,
       coalesce(r.trace_parent, '')::text AS trace_parent,
       (r.parent_run IS NOT NULL)::boolean AS has_parent,
       coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
FROM unnest((SELECT @ids::uuid[])) WITH ORDINALITY AS k(id, ord)
CROSS JOIN LATERAL (
    SELECT d.id, d.workflow, d.tenant, d.status, d.pending, d.slot, d.timeout_ms, d.deadline_at, d.input, d.trace_parent, d.parent_run
    FROM dagen_runs d WHERE d.id = k.id
    FOR NO KEY UPDATE SKIP LOCKED
) AS r
ORDER BY k.ord;

-- name: UpdateRuns :exec
-- Writes run states decided under the run lock. An empty failure_step keeps
-- the stored failure. = ANY(ARRAY(…)) keeps the scan to the runs' keys
-- whatever the estimates (joined, the planner hashed the whole table).
UPDATE dagen_runs r
SET status = u.status,
    pending = u.pending,
    failure_step = CASE WHEN u.failure_step = '' THEN r.failure_step ELSE u.failure_step END,
    failure_attempt = CASE WHEN u.failure_step = '' THEN r.failure_attempt ELSE u.failure_attempt END,
    failure_message = CASE WHEN u.failure_step = '' THEN r.failure_message ELSE u.failure_message END,
    finished_at = CASE WHEN u.status IN ('QUEUED', 'RUNNING') THEN NULL ELSE coalesce(r.finished_at, @now::timestamptz) END
FROM (
    SELECT unnest(@ids::uuid[]) AS id,
           unnest(@statuses::text[]) AS status,
           unnest(@pendings::integer[]) AS pending,
           unnest(@failure_steps::text[]) AS failure_step,
           unnest(@failure_attempts::integer[]) AS failure_attempt,
           unnest(@failure_messages::text[]) AS failure_message
) AS u
WHERE r.id = u.id AND r.id = ANY(ARRAY(SELECT unnest(@ids::uuid[])));

-- name: GetRun :one
SELECT id, workflow, fingerprint, tenant, status, input, failure_step, failure_attempt,
       failure_message, created_at, finished_at, coalesce(key, '')::text AS key,
       slot, deadline_at, parent_run, parent_task, parent_attempt, result_task
FROM dagen_runs
WHERE id = @id;

-- name: GetRunStatus :one
-- A run's status alone: one lookup by primary key that leaves the input
-- (stored out of line once large) unread.
SELECT status FROM dagen_runs WHERE id = @id;

-- name: NotifyCancelled :exec
-- Tells the schema's listeners, on commit, that runs were cancelled: one
-- notification a run, whose payload is its id. A schema whose name makes
-- the channel longer than a Postgres identifier (63 bytes) gets no
-- notification rather than a failed cancel: heartbeats deliver
-- cancellations anyway.
SELECT pg_notify('dagen_cancel.' || current_schema(), id::text)
FROM unnest(@run_ids::uuid[]) AS id
WHERE octet_length('dagen_cancel.' || current_schema()) <= 63;

-- name: CancelChannel :one
-- The channel NotifyCancelled notifies: one per schema.
SELECT ('dagen_cancel.' || current_schema())::text AS channel;

-- name: RunExists :one
SELECT EXISTS (SELECT 1 FROM dagen_runs WHERE id = @id);

-- name: PruneCandidates :many
-- Runs that finished before cutoff and were made before made_before,
-- oldest first (the younger ones are left for their ranges' drops). A run
-- finishes after it was made, so the created_at index bounds the scan.
SELECT id FROM dagen_runs
WHERE created_at < @made_before::timestamptz AND finished_at < @cutoff::timestamptz
ORDER BY created_at
LIMIT @max;

-- name: LockPrunableRuns :many
-- Locks finished runs that no task can change any more (no queued, running
-- or retrying task: a failed run's stragglers and onfailure task), skipping
-- runs another transaction holds.
SELECT r.id FROM dagen_runs r
WHERE r.id = ANY(@ids::uuid[])
  AND r.status NOT IN ('QUEUED', 'RUNNING')
  AND r.finished_at < @cutoff::timestamptz
  AND NOT EXISTS (
      SELECT 1 FROM dagen_tasks t
      WHERE t.run_id = r.id AND t.status IN ('QUEUED', 'RUNNING', 'BACKOFF')
  )
ORDER BY r.id
FOR UPDATE SKIP LOCKED;

-- name: DeleteRuns :one
-- Deletes runs with everything of theirs and returns how many there were.
WITH tasks AS (DELETE FROM dagen_tasks WHERE dagen_tasks.run_id = ANY(@ids::uuid[])),
     evs AS (DELETE FROM dagen_events WHERE dagen_events.run_id = ANY(@ids::uuid[])),
     tms AS (DELETE FROM dagen_timers WHERE dagen_timers.run_id = ANY(@ids::uuid[])),
     rdy AS (DELETE FROM dagen_ready WHERE dagen_ready.run_id = ANY(@ids::uuid[])),
     kys AS (DELETE FROM dagen_run_keys WHERE dagen_run_keys.run_id = ANY(@ids::uuid[])),
     runs AS (DELETE FROM dagen_runs WHERE dagen_runs.id = ANY(@ids::uuid[]) RETURNING 1)
SELECT count(*) FROM runs;

-- name: InsertKeyedRuns :many
-- Inserts new runs some of which have idempotency keys, and returns the ids
-- of those inserted: a run whose key a retained run (or an earlier run of
-- the list) has is not. The keys go into dagen_run_keys first (a unique
-- index of the partitioned dagen_runs cannot hold them); a trigger racing
-- with this one on the same key waits for it on that primary key, then
-- finds its run. An id that exists already violates dagen_runs_pkey.
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
), r AS (
    SELECT unnest(@ids::uuid[]) AS id,
           unnest(@workflows::text[]) AS workflow,
           unnest(@fingerprints::text[]) AS fingerprint,
           unnest(@tenants::text[]) AS tenant,
           unnest(@inputs::bytea[]) AS input,
           unnest(@pendings::integer[]) AS pending,
           unnest(@keys::text[]) AS key,
           unnest(@statuses::text[]) AS status,
           unnest(@capped::boolean[]) AS capped,
           unnest(@slots::text[]) AS slot,
           unnest(@timeout_ms::bigint[]) AS timeout_ms,
           unnest(@trace_parents::text[]) AS trace_parent,
           unnest(@priorities::smallint[]) AS priority
), keyed AS (
    INSERT INTO dagen_run_keys (workflow, tenant, key, run_id)
    SELECT r.workflow, r.tenant, r.key, r.id FROM r WHERE r.key <> ''
    ON CONFLICT (workflow, tenant, key) DO NOTHING
    RETURNING run_id
)
INSERT INTO dagen_runs (id, workflow, fingerprint, tenant, status, input, pending, created_at, key,
                        slot, timeout_ms, deadline_at, trace_parent, priority)
SELECT r.id, r.workflow, r.fingerprint, r.tenant, r.status, r.input, r.pending, clock.now, nullif(r.key, ''),
       CASE WHEN r.capped THEN r.slot END,
       nullif(r.timeout_ms, 0), CASE WHEN r.timeout_ms > 0 THEN clock.now + r.timeout_ms * interval '1 millisecond' END,
       nullif(r.trace_parent, ''), r.priority
FROM clock, r
WHERE r.key = '' OR r.id IN (SELECT keyed.run_id FROM keyed)
RETURNING id;

-- name: RunsByKey :many
-- The retained runs that have these keys, of these workflows and tenants.
SELECT r.workflow, r.tenant, r.key, r.run_id AS id
FROM (
    SELECT unnest(@workflows::text[]) AS workflow,
           unnest(@tenants::text[]) AS tenant,
           unnest(@keys::text[]) AS key
) AS k
JOIN dagen_run_keys r ON r.workflow = k.workflow AND r.tenant = k.tenant AND r.key = k.key;
