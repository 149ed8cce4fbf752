-- name: TenantsAhead :many
-- What CompleteAndContinue needs of the fair queue to decide which
-- tenants' steps may skip it: the block pointers of @tenants, and of up to
-- two tenants whose pointer is past the frontier (those with work queued,
-- or claimed in the head block), with the frontier. Read without locks: a
-- tenant that enqueues meanwhile is seen by the next batch.
SELECT g.tenant::text AS tenant, g.block_ptr::bigint AS block_ptr, f.block::bigint AS frontier
FROM dagen_queue_frontier f
CROSS JOIN LATERAL (
    (SELECT x.tenant, x.block_ptr FROM dagen_tenant_groups x WHERE x.tenant = ANY(@tenants::text[]))
    UNION
    (SELECT y.tenant, y.block_ptr FROM dagen_tenant_groups y WHERE y.block_ptr > f.block LIMIT 2)
) g;

-- name: ContinueTasks :many
-- Starts, for @worker, QUEUED tasks given by key, which the same
-- transaction made ready and did not enqueue (CompleteAndContinue): as
-- ClaimTasks starts what it takes from the queue, with a new attempt, a
-- lease and the STARTED event kept in the row, and returns what the steps
-- need, in the order of the keys. Each key is one lookup of the primary
-- key, and the lists are read through subqueries so that the plan is kept
-- (as in GetTasks).
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
),
k AS (
    SELECT unnest((SELECT @run_ids::uuid[])) AS run_id,
           unnest((SELECT @names::text[])) AS name,
           generate_series(1, cardinality((SELECT @run_ids::uuid[]))) AS ord
),
claimed AS (
    UPDATE dagen_tasks t
    SET status = 'RUNNING',
        attempt = t.attempt + 1,
        worker = @worker::text,
        started_event = nextval('dagen_event_seq'),
        started_at = clock.now
    FROM k, clock
    WHERE t.run_id = k.run_id AND t.name = k.name AND t.status = 'QUEUED'
      AND t.ctid = ANY(ARRAY(
          SELECT x.ctid
          FROM k AS k2
          CROSS JOIN LATERAL (
              SELECT t2.ctid FROM dagen_tasks t2 WHERE t2.run_id = k2.run_id AND t2.name = k2.name LIMIT 1
          ) AS x
      ))
    RETURNING k.ord, t.run_id, t.name, t.kind, t.attempt, t.parents, t.started_event, t.signature,
              t.each, t.item, t.element
),
leased AS (
    INSERT INTO dagen_leases (id, run_id, task, worker, lease_until)
    SELECT claimed.started_event, claimed.run_id, claimed.name, @worker::text,
           clock.now + make_interval(secs => @lease_seconds::float8)
    FROM claimed, clock
)
SELECT c.run_id, c.name, c.kind, c.attempt, c.signature, coalesce(c.element, 0)::integer AS element,
       r.workflow, r.tenant,
       (CASE WHEN r.id = ANY(@known::uuid[]) THEN NULL ELSE r.input END)::bytea AS input,
       (r.id = ANY(@known::uuid[]))::boolean AS input_omitted,
       c.parents::text[] AS parent_names,
       coalesce(par.statuses, '{}')::text[] AS parent_statuses,
       coalesce(par.outputs, '{}')::bytea[] AS parent_outputs
FROM claimed c
JOIN dagen_runs r ON r.id = c.run_id
LEFT JOIN LATERAL (
    -- One primary-key lookup a parent, as in ClaimTasks.
    SELECT array_agg(pt.status ORDER BY p.ord) AS statuses,
           array_agg(CASE WHEN p.name = c.each THEN c.item ELSE pt.output END ORDER BY p.ord) AS outputs
    FROM unnest(c.parents) WITH ORDINALITY AS p(name, ord)
    CROSS JOIN LATERAL (
        SELECT pt.status, pt.output FROM dagen_tasks pt
        WHERE pt.run_id = c.run_id AND pt.name = p.name
        LIMIT 1
    ) AS pt
) par ON true
ORDER BY c.ord;
