-- name: TenantsAhead :many
-- Which of @tenants may have their ready steps skip the fair queue
-- (CompleteAndContinue): a tenant that has nothing queued past the head
-- block (its block pointer at most one past the frontier), or else one
-- whose head blocks (the frontier's and the next) hold no other tenant's
-- task; the head blocks are read only for a tenant with a backlog. A tenant with work queued has a task there:
-- claims take the queue in id order and a tenant's tasks take consecutive
-- blocks from the frontier on. Each tenant is one key lookup and an index
-- range scan of the head blocks that stops at the first task of another
-- tenant, past at most two of its own, whatever the number of tenants (the
-- list is read through subqueries, as in EnsureTenants, so that tenants
-- are found by key whatever the estimates). Read without locks: a tenant
-- that enqueues meanwhile is seen by the next batch.
SELECT g.tenant::text AS tenant,
       (CASE WHEN g.block_ptr <= f.block + 1 THEN true
             ELSE NOT EXISTS (
                 SELECT 1 FROM dagen_ready q
                 WHERE q.id >= f.block * 1048576 AND q.id < (f.block + 2) * 1048576
                   AND q.id % 1048576 <> g.group_id
             )
        END)::boolean AS may_go
FROM dagen_queue_frontier f
CROSS JOIN dagen_tenant_groups g
WHERE g.tenant = ANY(ARRAY(SELECT unnest((SELECT @tenants::text[]))));

-- name: ContinueTasks :many
-- Starts, for @worker, QUEUED tasks given by key, which the same
-- transaction made ready and did not enqueue (CompleteAndContinue): as
-- ClaimTasks starts what it takes from the queue, with a new attempt, a
-- lease and the STARTED event kept in the row, and returns what the steps
-- need, in the order of the keys (ord: a key's position, from 1).
--
-- The caller has the runs' rows (it locked them), for a key flagged in
-- @own_inputs its run's input (input_omitted is then set), and for a key
-- flagged in @own_parents the results of all its parents (the batch
-- resolved them): those are not read. Of the rest, a run's input is read
-- once, and only for a run not in @known, and the parents that tasks of
-- one run share once (run_shared, parents_shared: as in ClaimTasks).
--
-- The tasks are found by @ctids, where the transaction's DecrementChildren
-- left their rows, and their keys: a task that moved since (none does) is
-- not started, and the caller enqueues it. The lists are read through
-- subqueries so that the plan is kept (as in GetTasks).
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
),
k AS (
    SELECT unnest((SELECT @run_ids::uuid[])) AS run_id,
           unnest((SELECT @names::text[])) AS name,
           unnest((SELECT @own_parents::boolean[])) AS own_parents,
           unnest((SELECT @own_inputs::boolean[])) AS own_input,
           generate_series(1, cardinality((SELECT @run_ids::uuid[]))) AS ord
),
claimed AS (
    UPDATE dagen_tasks t
    SET status = 'RUNNING',
        attempt = t.attempt + 1,
        worker = @worker::text,
        claim = dagen_new_claim(), -- as in ClaimTasks
        started_event = nextval('dagen_event_seq'),
        started_at = clock.now
    FROM k, clock
    WHERE t.run_id = k.run_id AND t.name = k.name AND t.status = 'QUEUED'
      AND t.ctid = ANY(ARRAY(SELECT unnest(@ctids::tid[])))
    RETURNING k.ord, k.own_parents, k.own_input, t.run_id, t.name, t.kind, t.attempt, t.claim, t.parents, t.started_event, t.signature,
              t.each, t.item, t.element, t.children, t.ctid::tid AS row_ctid
),
leased AS (
    -- One lease for the tasks started, as in ClaimTasks.
    INSERT INTO dagen_leases (id, token, worker, lease_until, run_ids, tasks, events)
    SELECT min(claimed.started_event), min(claimed.claim), @worker::text,
           min(clock.now) + make_interval(secs => @lease_seconds::float8),
           array_agg(claimed.run_id), array_agg(claimed.name), array_agg(claimed.started_event)
    FROM claimed, clock
    HAVING count(*) > 0
    RETURNING dagen_leases.id
),
shared AS (
    -- Read once for the tasks that share them, as in ClaimTasks.
    SELECT claimed.ord, claimed.own_parents, claimed.run_id, claimed.name, claimed.kind, claimed.attempt, claimed.claim, claimed.parents,
           claimed.signature, claimed.each, claimed.item, claimed.element, claimed.started_event,
           claimed.children, claimed.row_ctid,
           claimed.own_input OR claimed.run_id = ANY(@known::uuid[]) AS known,
           row_number() OVER (PARTITION BY claimed.run_id ORDER BY claimed.ord) AS run_rank,
           CASE WHEN claimed.each = ''
                THEN row_number() OVER (PARTITION BY claimed.run_id, claimed.parents, claimed.each ORDER BY claimed.ord)
                ELSE 1
           END AS parents_rank
    FROM claimed
)
SELECT c.ord::integer AS ord, c.run_id, c.name, c.kind, c.attempt, c.claim::bigint AS claim, c.signature, coalesce(c.element, 0)::integer AS element,
       (SELECT leased.id FROM leased)::bigint AS lease,
       (c.run_rank > 1)::boolean AS run_shared,
       -- A scalar subquery under CASE, not a lateral join: one rescan a
       -- task costs the run-time pruning of every range of the runs
       -- (several in the soak), wanted or not, and the caller holds
       -- almost every run's input already.
       (CASE WHEN c.run_rank = 1 AND NOT c.known
             THEN (SELECT r.input FROM dagen_runs r WHERE r.id = c.run_id LIMIT 1)
        END)::bytea AS input,
       c.known::boolean AS input_omitted,
       c.parents::text[] AS parent_names,
       (c.parents_rank > 1)::boolean AS parents_shared,
       coalesce(par.statuses, '{}')::text[] AS parent_statuses,
       coalesce(par.outputs, '{}')::bytea[] AS parent_outputs,
       -- The claim view (migration 013), as in ClaimTasks.
       c.started_event::bigint AS started_event, c.children::text[] AS children, c.row_ctid::tid AS row_ctid
FROM shared c
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
    WHERE c.parents_rank = 1 AND NOT c.own_parents
) par ON true
ORDER BY c.ord;
