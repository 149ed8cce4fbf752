-- name: StoreNow :one
SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now;

-- name: UpsertSchedule :execrows
-- Creates a schedule or updates the one with its name, keeping paused,
-- and next_at unless the expression or zone changed. A declared schedule
-- is not replaced by one that is not: no row is written then.
INSERT INTO dagen_schedules AS s (workflow, tenant, name, cron, zone, catchup, input, declared, next_at, created_at, updated_at)
VALUES (@workflow, @tenant, @name, @cron, @zone, @catchup, @input, @declared,
        @next_at, coalesce(sqlc.narg('now')::timestamptz, now()), coalesce(sqlc.narg('now')::timestamptz, now()))
ON CONFLICT (workflow, tenant, name) DO UPDATE
SET cron = excluded.cron, zone = excluded.zone, catchup = excluded.catchup, input = excluded.input,
    declared = excluded.declared,
    next_at = CASE WHEN s.cron = excluded.cron AND s.zone = excluded.zone THEN s.next_at ELSE excluded.next_at END,
    updated_at = excluded.updated_at
WHERE excluded.declared OR NOT s.declared;

-- name: DeleteUndeclared :exec
-- Deletes the declared schedules of a workflow that are not in the lists.
DELETE FROM dagen_schedules s
WHERE s.workflow = @workflow AND s.declared
  AND NOT EXISTS (
      SELECT 1 FROM (SELECT unnest(@tenants::text[]) AS tenant, unnest(@names::text[]) AS name) AS k
      WHERE k.tenant = s.tenant AND k.name = s.name
  );

-- name: ListSchedules :many
SELECT workflow, tenant, name, cron, zone, catchup, input, declared, paused, next_at, last_at, last_run, created_at, updated_at
FROM dagen_schedules
WHERE (@workflow::text = '' OR workflow = @workflow) AND (@tenant::text = '' OR tenant = @tenant)
ORDER BY workflow, tenant, name;

-- name: PauseSchedule :execrows
-- Pauses or resumes a schedule; resuming a paused one moves it to @next_at.
UPDATE dagen_schedules
SET next_at = CASE WHEN paused AND NOT @paused::boolean THEN @next_at::timestamptz ELSE next_at END,
    paused = @paused, updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE workflow = @workflow AND tenant = @tenant AND name = @name;

-- name: DeleteSchedule :execrows
DELETE FROM dagen_schedules WHERE workflow = @workflow AND tenant = @tenant AND name = @name;

-- name: DueSchedules :many
-- The due schedules of these workflows, earliest first, each with the
-- store's clock; one row with the clock alone (its schedule columns NULL)
-- when none is due, so a poll is one round trip. Read without locks:
-- FireSchedule locks each, and checks it is still due.
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
)
SELECT clock.now, coalesce(d.workflow, '')::text AS workflow, coalesce(d.tenant, '')::text AS tenant,
       coalesce(d.name, '')::text AS name, coalesce(d.cron, '')::text AS cron, coalesce(d.zone, '')::text AS zone,
       coalesce(d.catchup, '')::text AS catchup, d.input, coalesce(d.declared, false)::boolean AS declared,
       coalesce(d.paused, false)::boolean AS paused, d.next_at, d.last_at, d.last_run, d.created_at, d.updated_at
FROM clock
LEFT JOIN LATERAL (
    SELECT s.* FROM dagen_schedules s
    WHERE NOT s.paused AND s.next_at <= clock.now AND s.workflow = ANY(@workflows::text[])
    ORDER BY s.next_at, s.workflow, s.tenant, s.name
    LIMIT @max
) AS d ON true
ORDER BY d.next_at, d.workflow, d.tenant, d.name;

-- name: LockDueSchedule :many
-- Locks a schedule still due at the slot the caller read, unless another
-- transaction holds it (it is firing it).
SELECT 1::integer AS locked FROM dagen_schedules
WHERE workflow = @workflow AND tenant = @tenant AND name = @name AND next_at = @due::timestamptz AND NOT paused
FOR UPDATE SKIP LOCKED;

-- name: AdvanceSchedule :exec
UPDATE dagen_schedules
SET next_at = @next_at::timestamptz,
    last_at = coalesce(sqlc.narg('last_at')::timestamptz, last_at),
    last_run = coalesce(sqlc.narg('last_run')::uuid, last_run),
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE workflow = @workflow AND tenant = @tenant AND name = @name;
