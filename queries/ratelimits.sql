-- Rate limits, run priorities and tenant weights (migration 020).

-- name: PutRateLimits :exec
-- Creates or updates rate limits by name, in name order, and marks the
-- schema as having them (see dagen_flow_flags).
WITH put AS (
    INSERT INTO dagen_rate_limits AS l (name, rate, burst)
    SELECT x.name, x.rate, x.burst
    FROM (SELECT unnest(@names::text[]) AS name, unnest(@rates::float8[]) AS rate, unnest(@bursts::integer[]) AS burst) AS x
    ORDER BY x.name
    ON CONFLICT (name) DO UPDATE SET rate = excluded.rate, burst = excluded.burst
    WHERE l.rate <> excluded.rate OR l.burst <> excluded.burst
)
UPDATE dagen_flow_flags SET rate_limits = true WHERE NOT rate_limits AND cardinality(@names::text[]) > 0;

-- name: MarkFlow :exec
-- Marks the schema as having run priorities, or rate-limited steps: from
-- then on an enqueue reads each task's priority and rate limit, and claims
-- take ClaimTasksFlow. A creation marks the rate limits of its steps
-- itself, so that a task whose limit no worker has put yet waits for it
-- rather than going in unlimited. A no-op, and no lock, once marked.
UPDATE dagen_flow_flags
SET priorities = priorities OR @priorities::boolean,
    rate_limits = rate_limits OR @rate_limits::boolean
WHERE (@priorities::boolean AND NOT priorities) OR (@rate_limits::boolean AND NOT rate_limits);

-- name: ReadFlowFlags :one
-- Whether the schema has run priorities or rate limits: claims then take
-- ClaimTasksFlow.
SELECT (f.rate_limits OR f.priorities)::boolean AS flow FROM dagen_flow_flags f;

-- name: TakeRateWakes :many
-- Takes the looks due at buckets for one admission: their next look moves
-- to @until, in case the admission is lost with its worker (it sets the
-- real one), so the other workers that found them due leave them to it.
-- Sent alone, before the admission's transaction: it holds the rows only
-- for itself. It locks them in key order and passes over a row another
-- holds (a worker taking the same look, an enqueue touching it, an
-- admission setting it): updated in the join's order, two takes of the
-- same buckets deadlocked; a row passed over is due again at the next
-- look, or was just taken.
WITH due AS (
    SELECT w.rate_limit, w.rate_key
    FROM dagen_rate_wakes w
    WHERE (w.rate_limit, w.rate_key) IN (SELECT unnest(@limits::text[]), unnest(@keys::text[]))
      AND w.wake_at <= coalesce(sqlc.narg('now')::timestamptz, now())
    ORDER BY w.rate_limit, w.rate_key
    FOR UPDATE SKIP LOCKED
)
UPDATE dagen_rate_wakes w
SET wake_at = @until::timestamptz
FROM due
WHERE w.rate_limit = due.rate_limit AND w.rate_key = due.rate_key
RETURNING w.rate_limit, w.rate_key, w.touched;

-- name: EnsureBuckets :exec
-- Creates the buckets that do not exist yet, full.
INSERT INTO dagen_rate_buckets (rate_limit, rate_key, tokens, updated_at)
SELECT x.rate_limit, x.rate_key, l.burst, coalesce(sqlc.narg('now')::timestamptz, now())
FROM (SELECT unnest(@limits::text[]) AS rate_limit, unnest(@keys::text[]) AS rate_key) AS x
JOIN dagen_rate_limits l ON l.name = x.rate_limit
ORDER BY x.rate_limit, x.rate_key
ON CONFLICT (rate_limit, rate_key) DO NOTHING;

-- name: LockBuckets :many
-- Locks the buckets, in key order, and returns each one's tokens at its
-- updated_at, its limit, and the store's now.
SELECT b.rate_limit, b.rate_key, b.tokens, b.updated_at, l.rate, l.burst,
       coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
FROM dagen_rate_buckets b
JOIN dagen_rate_limits l ON l.name = b.rate_limit
WHERE (b.rate_limit, b.rate_key) IN (
    SELECT unnest(@limits::text[]), unnest(@keys::text[])
)
ORDER BY b.rate_limit, b.rate_key
FOR UPDATE OF b;

-- name: TakeSpends :many
-- Takes the locked buckets' spends (kind 'spend', oldest first), and the
-- units their entries in the ready queue hold (kind 'held'), in one
-- statement: of a claim, both its spend and its entries' removal are seen,
-- or neither (its entries are then held, their spend to come): counted
-- apart, a claim that committed between the two would be in neither, and
-- its tokens let in twice. A statement after LockBuckets: its snapshot,
-- taken once the locks are held, sees the entries of the admission that
-- held them before.
WITH x AS (
    SELECT unnest(@limits::text[]) AS rate_limit, unnest(@keys::text[]) AS rate_key
),
taken AS (
    DELETE FROM dagen_rate_spends s
    USING x
    WHERE s.rate_limit = x.rate_limit AND s.rate_key = x.rate_key
    RETURNING s.rate_limit, s.rate_key, s.spent_at, s.units
)
SELECT 'spend'::text AS kind, t.rate_limit::text AS rate_limit, t.rate_key::text AS rate_key,
       t.spent_at::timestamptz AS spent_at, t.units::bigint AS units
FROM taken t
UNION ALL
SELECT 'held', x.rate_limit, x.rate_key, NULL,
       coalesce((SELECT sum(q.rate_units) FROM dagen_ready q
                 WHERE q.rate_limit = x.rate_limit AND q.rate_key = x.rate_key), 0)::bigint
FROM x
ORDER BY 1 DESC, 2, 3, 4;

-- name: SetBuckets :exec
-- Writes the locked buckets' tokens as an admission counted them.
UPDATE dagen_rate_buckets b
SET tokens = x.tokens, updated_at = x.updated_at
FROM (SELECT unnest(@limits::text[]) AS rate_limit, unnest(@keys::text[]) AS rate_key,
             unnest(@tokens::float8[]) AS tokens, unnest(@updated::timestamptz[]) AS updated_at) AS x
WHERE b.rate_limit = x.rate_limit AND b.rate_key = x.rate_key;

-- name: WaitingFor :many
-- The first tasks waiting for a bucket, in admission order: higher
-- priority first, then as they came.
SELECT w.run_id, w.task, w.signature, w.tenant, w.rate_units, w.priority, w.seq
FROM dagen_rate_waiting w
WHERE w.rate_limit = @rate_limit AND w.rate_key = @rate_key
ORDER BY w.priority DESC, w.seq
LIMIT @max;

-- name: TakeWaiting :exec
-- Removes admitted tasks from the waiting list. The caller holds their
-- bucket's lock.
DELETE FROM dagen_rate_waiting w
USING (SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@tasks::text[]) AS task) AS x
WHERE w.run_id = x.run_id AND w.task = x.task;

-- name: LockRateWakes :exec
-- Locks the wake rows of an admission's buckets in key order, before
-- SetRateWakes deletes, updates or inserts them: an enqueue that parks
-- tasks at buckets the admission holds touches their wake rows in key
-- order too, and the two could otherwise each hold a row the other wants.
SELECT w.rate_limit
FROM dagen_rate_wakes w
JOIN (SELECT unnest(@limits::text[]) AS rate_limit, unnest(@keys::text[]) AS rate_key) AS x
  ON w.rate_limit = x.rate_limit AND w.rate_key = x.rate_key
ORDER BY w.rate_limit, w.rate_key
FOR UPDATE OF w;

-- name: SetRateWakes :exec
-- Sets when each bucket is due its next look, in key order. A NULL wake
-- means nothing waited that the admission saw: the row goes, unless an
-- enqueue touched it since the admission took it (@touched): that one
-- parked a task the admission may not have seen, and the bucket is due
-- again at once. Sent last in an admission, after the tenants' rows, as
-- an enqueue takes them, and after LockRateWakes: the DELETE and UPDATE
-- below take their rows in no set order.
WITH x AS (
    SELECT unnest(@limits::text[]) AS rate_limit, unnest(@keys::text[]) AS rate_key,
           unnest(@wakes::timestamptz[]) AS wake_at, unnest(@touched::bigint[]) AS touched
),
gone AS (
    DELETE FROM dagen_rate_wakes w USING x
    WHERE w.rate_limit = x.rate_limit AND w.rate_key = x.rate_key AND x.wake_at IS NULL
      AND w.touched = x.touched
),
again AS (
    UPDATE dagen_rate_wakes w SET wake_at = coalesce(sqlc.narg('now')::timestamptz, now())
    FROM x
    WHERE w.rate_limit = x.rate_limit AND w.rate_key = x.rate_key AND x.wake_at IS NULL
      AND w.touched <> x.touched
)
INSERT INTO dagen_rate_wakes AS w (rate_limit, rate_key, wake_at)
SELECT x.rate_limit, x.rate_key, x.wake_at FROM x WHERE x.wake_at IS NOT NULL
ORDER BY x.rate_limit, x.rate_key
ON CONFLICT (rate_limit, rate_key) DO UPDATE SET wake_at = excluded.wake_at;

-- name: RateWaits :many
-- Why the tasks of a run wait for a rate limit: their bucket, its
-- tokens now, and the units waiting ahead of each (operator views).
SELECT w.task, w.rate_limit, w.rate_key, w.rate_units,
       (coalesce(least(l.burst::float8, b.tokens + l.rate * greatest(extract(epoch FROM coalesce(sqlc.narg('now')::timestamptz, now()) - b.updated_at), 0)), l.burst)
        - coalesce((SELECT sum(s.units) FROM dagen_rate_spends s
                    WHERE s.rate_limit = w.rate_limit AND s.rate_key = w.rate_key), 0))::float8 AS tokens,
       l.rate,
       coalesce((SELECT sum(q.rate_units) FROM dagen_ready q
                 WHERE q.rate_limit = w.rate_limit AND q.rate_key = w.rate_key), 0)::bigint AS held,
       (SELECT count(*) FROM dagen_rate_waiting a
        WHERE a.rate_limit = w.rate_limit AND a.rate_key = w.rate_key
          AND (a.priority > w.priority OR (a.priority = w.priority AND a.seq < w.seq)))::bigint AS ahead
FROM dagen_rate_waiting w
JOIN dagen_rate_limits l ON l.name = w.rate_limit
LEFT JOIN dagen_rate_buckets b ON b.rate_limit = w.rate_limit AND b.rate_key = w.rate_key
WHERE w.run_id = @run_id;

-- name: SetTenantWeight :exec
-- Gives a tenant a weight, making its group when it has none. A tenant
-- part-way through a block starts the next one: its places there were
-- counted for its old weight.
INSERT INTO dagen_tenant_groups AS g (tenant, group_id, weight)
VALUES (@tenant::text, nextval('dagen_tenant_group_seq'), @weight::integer)
ON CONFLICT (tenant) DO UPDATE
SET weight = excluded.weight,
    block_ptr = g.block_ptr + (g.block_fill > 0)::integer,
    block_fill = 0;

-- name: TenantWeights :many
-- The tenants with a weight other than 1.
SELECT tenant, weight FROM dagen_tenant_groups WHERE weight <> 1 ORDER BY tenant;
