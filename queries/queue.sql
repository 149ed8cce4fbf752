-- name: LockTenants :exec
-- Locks the tenants' rows of the fair queue, in tenant order, as Enqueue
-- does: a transaction that enqueues in two statements (a batch that
-- creates child runs, after its own flush) takes them all here first, so
-- that it waits for them in the order every other enqueue does, and its
-- later enqueues wait for nothing.
SELECT g.tenant FROM dagen_tenant_groups g
WHERE g.tenant = ANY(ARRAY(SELECT unnest((SELECT @tenants::text[]))))
ORDER BY g.tenant
FOR UPDATE;

-- name: EnsureTenants :exec
-- Gives each new tenant the next group id. Existing tenants are filtered
-- out first so the sequence is only spent on a race between two first
-- enqueues; rows go in tenant order so such a race cannot deadlock.
--
-- Tenants are found with = ANY(ARRAY(…)), one primary-key lookup each
-- whatever the estimates, and the list is read through a subquery, so no
-- plan is costed on its length: Postgres keeps one plan for the statement
-- instead of planning it at each run, which would cost every trigger (see
-- docs/performance.md, "Statements keep one plan").
INSERT INTO dagen_tenant_groups (tenant, group_id)
SELECT t.tenant, nextval('dagen_tenant_group_seq')
FROM (
    SELECT DISTINCT x.tenant
    FROM (SELECT unnest((SELECT @tenants::text[])) AS tenant) AS x
    WHERE x.tenant <> ALL(ARRAY(
        SELECT g.tenant FROM dagen_tenant_groups g
        WHERE g.tenant = ANY(ARRAY(SELECT unnest((SELECT @tenants::text[]))))
    ))
    ORDER BY x.tenant
) t
ON CONFLICT (tenant) DO NOTHING;

-- name: Enqueue :exec
-- Puts tasks in the fair ready queue. Each tenant's k tasks get the next
-- k places from max(its pointer, the frontier), in input order: a tenant
-- of weight w has w places in a block (block_fill of them taken), so its
-- tasks fill the places of one block before the next, and its pointer
-- moves past them. Tenant rows are locked in tenant order.
-- When rows went in, listeners of the schema's channel are notified (on
-- commit): a hint for idle workers, never the truth. Only when the queue
-- was empty, or when @force_notify is set: a notifying transaction holds a
-- lock that serializes every notifying commit of the database, flush
-- included, so under load, while the queue holds work that busy workers
-- claim anyway, a store notifies now and then (see notifyDue), not at
-- every enqueue. (The queue as this statement found it: its own rows are
-- not seen.)
--
-- A task flagged in @if_queued is enqueued only if it is QUEUED: StartRuns
-- flags the tasks InsertTasks may have started instead.
--
-- Once a schema has a run priority or a rate limit (dagen_flow_flags),
-- each task's row is read for them: an entry keeps its run's priority.
-- A task of a rate-limited step goes straight into the fair queue when its
-- bucket has room for it and no task waits for it (see "open" below);
-- else it is parked in dagen_rate_waiting, out of the fair queue, its
-- bucket made due (dagen_rate_wakes) unless it is due already, its row
-- touched either way. Locks are taken in an admission's order: buckets
-- (without waiting), then tenants' rows, then wake rows.
--
-- As in EnsureTenants, tenants are found by key whatever the estimates,
-- and the lists are read through subqueries so that Postgres keeps one
-- plan rather than planning each run (see docs/performance.md,
-- "Statements keep one plan").
--
-- EnqueuePlain repeats the fair places (input to inserted) without the
-- buckets, for triggers: a change of them goes into both.
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
),
given AS (
    SELECT unnest((SELECT @run_ids::uuid[])) AS run_id,
           unnest((SELECT @tasks::text[])) AS task,
           unnest((SELECT @signatures::text[])) AS signature,
           unnest((SELECT @tenants::text[])) AS tenant,
           unnest((SELECT @if_queued::boolean[])) AS if_queued,
           generate_series(1, cardinality((SELECT @run_ids::uuid[]))) AS ord
),
input AS (
    SELECT x.run_id, x.task, x.signature, x.tenant, x.ord,
           -- A mapped step's task takes no token: its elements do (they
           -- have its limit).
           coalesce(t.priority, 0)::smallint AS priority,
           CASE WHEN t.kind <> 'map' THEN t.rate_limit END AS rate_limit, coalesce(t.rate_key, '') AS rate_key,
           coalesce(t.rate_units, 1)::integer AS rate_units
    FROM given AS x
    -- One lookup a task, and only for a flagged task or once the schema
    -- has priorities or rate limits: LIMIT 1 keeps it a lookup (as EXISTS,
    -- the planner hashed the whole tasks table instead).
    LEFT JOIN LATERAL (
        SELECT t.status, t.kind, t.priority, t.rate_limit, t.rate_key, t.rate_units
        FROM dagen_tasks t
        WHERE (x.if_queued OR (SELECT f.rate_limits OR f.priorities FROM dagen_flow_flags f))
          AND t.run_id = x.run_id AND t.name = x.task
        LIMIT 1
    ) AS t ON true
    WHERE NOT x.if_queued OR t.status = 'QUEUED'
),
open AS MATERIALIZED (
    -- The buckets of the rate-limited tasks (unless an admission let them
    -- in, @admitted), locked without waiting: a bucket that an admission
    -- or another enqueue holds parks its tasks, so that an enqueue, which
    -- may hold tenants' rows already (LockTenants), never waits for a
    -- bucket. Its tokens are counted as an admission counts them, but for
    -- the spends' order (the bucket's gain up to now first, at most its
    -- burst, then every spend: never more than the admission's count). A
    -- bucket is usable when no other took it since this statement's
    -- snapshot (the row locked is the row the snapshot reads: the spends
    -- and held units read below are then all there are) and no task waits
    -- for it (those go first, in an admission's order).
    SELECT b.rate_limit, b.rate_key, b.updated_at,
           least(l.burst::float8, b.tokens + l.rate * greatest(extract(epoch FROM clock.now - b.updated_at), 0)) AS gained,
           b.xmin::text = (SELECT s.xmin::text FROM dagen_rate_buckets s
                           WHERE s.rate_limit = b.rate_limit AND s.rate_key = b.rate_key)
             AND NOT EXISTS (SELECT 1 FROM dagen_rate_waiting w
                             WHERE w.rate_limit = b.rate_limit AND w.rate_key = b.rate_key) AS usable
    FROM dagen_rate_buckets b
    JOIN dagen_rate_limits l ON l.name = b.rate_limit
    CROSS JOIN clock
    WHERE NOT @admitted::boolean
      -- In a caller's REPEATABLE READ or SERIALIZABLE transaction (StartTx)
      -- the lock of a bucket changed since its snapshot would fail it: its
      -- tasks park.
      AND current_setting('transaction_isolation') = 'read committed'
      AND (b.rate_limit, b.rate_key) IN (SELECT input.rate_limit, input.rate_key FROM input WHERE input.rate_limit IS NOT NULL)
    ORDER BY b.rate_limit, b.rate_key
    FOR UPDATE OF b SKIP LOCKED
),
spent AS (
    -- The spends a usable bucket's tokens count in, taken: with the held
    -- units below, in one snapshot (see TakeSpends).
    DELETE FROM dagen_rate_spends s
    USING open o
    WHERE o.usable AND s.rate_limit = o.rate_limit AND s.rate_key = o.rate_key
    RETURNING s.rate_limit, s.rate_key, s.units
),
room AS (
    -- What a usable bucket has: its tokens, and the units its entries in
    -- the fair queue hold.
    SELECT o.rate_limit, o.rate_key, o.updated_at,
           o.gained - coalesce((SELECT sum(x.units) FROM spent x
                                WHERE x.rate_limit = o.rate_limit AND x.rate_key = o.rate_key), 0) AS tokens,
           coalesce((SELECT sum(q.rate_units) FROM dagen_ready q
                     WHERE q.rate_limit = o.rate_limit AND q.rate_key = o.rate_key), 0) AS held
    FROM open o
    WHERE o.usable
),
straight AS (
    -- The rate-limited tasks that go straight in: of each usable bucket,
    -- the first (in input order) that its tokens less its held units hold.
    SELECT r.run_id, r.task
    FROM (
        SELECT input.run_id, input.task, room.tokens - room.held AS room,
               sum(input.rate_units) OVER (PARTITION BY input.rate_limit, input.rate_key ORDER BY input.ord) AS upto
        FROM input
        JOIN room ON room.rate_limit = input.rate_limit AND room.rate_key = input.rate_key
    ) AS r
    WHERE r.upto <= r.room
),
counted_in AS (
    -- A usable bucket's tokens with its spends counted in (even when no task
    -- went straight in), and a new row version: an enqueue that locks it
    -- next but read it before this one committed sees that it changed, and
    -- parks rather than count without what this one let in. (An admission
    -- waits for the lock and counts in a statement after it.)
    UPDATE dagen_rate_buckets b
    SET tokens = room.tokens, updated_at = greatest(room.updated_at, clock.now)
    FROM room, clock
    WHERE b.rate_limit = room.rate_limit AND b.rate_key = room.rate_key
),
fair AS (
    -- A rate-limited task goes in when an admission gave it tokens
    -- (@admitted) or its bucket has room (straight), with its bucket,
    -- whose tokens its claim takes.
    SELECT input.* FROM input
    WHERE input.rate_limit IS NULL OR @admitted::boolean
       OR EXISTS (SELECT 1 FROM straight WHERE straight.run_id = input.run_id AND straight.task = input.task)
),
counts AS (
    SELECT fair.tenant, count(*) AS k FROM fair GROUP BY fair.tenant
),
locked AS MATERIALIZED (
    SELECT g.tenant, g.block_ptr, g.block_fill, g.weight
    FROM dagen_tenant_groups g
    WHERE g.tenant = ANY(ARRAY(SELECT counts.tenant FROM counts))
    ORDER BY g.tenant
    FOR UPDATE
),
placed AS (
    -- The frontier is a scalar subquery, not a join: joined, the planner
    -- took the one-row table for thousands of rows, and the estimates of a
    -- large enqueue grew past the point where Postgres JIT-compiles the
    -- statement, and each such enqueue paid for a long compilation (see
    -- docs/performance.md, "No JIT compilation of large batches").
    SELECT l.tenant, l.weight, c.k,
           greatest(l.block_ptr, s.frontier) AS first_block,
           CASE WHEN l.block_ptr >= s.frontier THEN least(l.block_fill, l.weight - 1) ELSE 0 END AS first_fill
    FROM locked l
    JOIN counts c ON c.tenant = l.tenant
    CROSS JOIN (SELECT (SELECT f.block FROM dagen_queue_frontier f) AS frontier) AS s
),
bumped AS (
    -- The tenant list only narrows the scan to the locked rows' keys.
    UPDATE dagen_tenant_groups g
    SET block_ptr = p.first_block + (p.first_fill + p.k) / p.weight,
        block_fill = (p.first_fill + p.k) % p.weight
    FROM placed p
    WHERE g.tenant = p.tenant
      AND g.tenant = ANY(ARRAY(SELECT locked.tenant FROM locked))
    RETURNING g.tenant, g.group_id, p.first_block, p.first_fill, p.weight
),
inserted AS (
    INSERT INTO dagen_ready (id, run_id, task, signature, priority, rate_limit, rate_key, rate_units)
    SELECT b.group_id + 1048576 * (b.first_block + (b.first_fill + row_number() OVER (PARTITION BY i.tenant ORDER BY i.ord) - 1) / b.weight),
           i.run_id, i.task, i.signature, i.priority, i.rate_limit, CASE WHEN i.rate_limit IS NOT NULL THEN i.rate_key END,
           CASE WHEN i.rate_limit IS NOT NULL THEN i.rate_units END
    FROM fair i
    JOIN bumped b ON b.tenant = i.tenant
    ON CONFLICT (run_id, task) DO NOTHING
    RETURNING 1
),
parked AS (
    INSERT INTO dagen_rate_waiting (rate_limit, rate_key, priority, rate_units, run_id, task, signature, tenant, enqueued_at)
    SELECT i.rate_limit, i.rate_key, i.priority, i.rate_units, i.run_id, i.task, i.signature, i.tenant, clock.now
    FROM input i, clock
    WHERE i.rate_limit IS NOT NULL AND NOT @admitted::boolean
      AND NOT EXISTS (SELECT 1 FROM straight WHERE straight.run_id = i.run_id AND straight.task = i.task)
    ORDER BY i.ord
    ON CONFLICT (run_id, task) DO NOTHING
    RETURNING dagen_rate_waiting.rate_limit, dagen_rate_waiting.rate_key
),
woken AS (
    -- A bucket due already keeps its time, but counts the touch: the
    -- admission that holds its look then knows a task came that it may not
    -- have seen, and does not drop the row (see SetRateWakes).
    INSERT INTO dagen_rate_wakes AS w (rate_limit, rate_key, wake_at)
    SELECT DISTINCT p.rate_limit, p.rate_key, clock.now
    FROM parked p, clock
    ORDER BY p.rate_limit, p.rate_key
    ON CONFLICT (rate_limit, rate_key) DO UPDATE SET touched = w.touched + 1
),
counted AS (
    SELECT (SELECT count(*) FROM inserted) AS n, (SELECT count(*) FROM parked) AS parked
)
SELECT counted.n::bigint AS n, counted.parked::bigint AS parked,
       -- The queue is taken for empty when it holds no row from the
       -- frontier's block on: the rows before it are those claims passed
       -- by (locked, or of signatures they do not serve), among the dead
       -- rows of every claim since the last vacuum, which a look at the
       -- whole queue read one by one, page after page at every enqueue
       -- under load (see docs/performance.md, "Vacuuming the queue tables
       -- by volume"). Taking such a queue for empty costs a notification,
       -- a hint.
       -- A task parked for tokens notifies as a queued one does: a worker
       -- that hears it looks at its timers, where the bucket is due.
       CASE WHEN counted.n + counted.parked > 0 AND (@force_notify::boolean OR NOT EXISTS (
                SELECT 1 FROM dagen_ready q
                WHERE q.id >= (SELECT f.block FROM dagen_queue_frontier f) * 1048576
            ))
            THEN pg_notify('dagen_ready.' || current_schema(), '') END::text AS notified
FROM counted;

-- name: EnqueuePlain :exec
-- Enqueue for tasks none of which has a rate limit: the same fair places,
-- priorities and notifications, none of the rate limits' buckets, which
-- Enqueue passes such tasks by (it puts a task with no rate limit straight
-- in the fair queue) but which took most of its planning. Every connection
-- plans a statement again after an ANALYZE or a vacuum of a table it
-- reads, and a trigger's transaction enqueues: at a trigger after the hot
-- tables' ANALYZE, the planning was the trigger's largest part (see
-- docs/performance.md, "Triggers plan a small enqueue"). A trigger's
-- creation sends it when none of its runs' steps has a rate limit.
WITH given AS (
    SELECT unnest((SELECT @run_ids::uuid[])) AS run_id,
           unnest((SELECT @tasks::text[])) AS task,
           unnest((SELECT @signatures::text[])) AS signature,
           unnest((SELECT @tenants::text[])) AS tenant,
           unnest((SELECT @if_queued::boolean[])) AS if_queued,
           generate_series(1, cardinality((SELECT @run_ids::uuid[]))) AS ord
),
input AS (
    SELECT x.run_id, x.task, x.signature, x.tenant, x.ord,
           coalesce(t.priority, 0)::smallint AS priority
    FROM given AS x
    -- As in Enqueue: one lookup a task, only for a flagged task or once
    -- the schema has priorities.
    LEFT JOIN LATERAL (
        SELECT t.status, t.priority
        FROM dagen_tasks t
        WHERE (x.if_queued OR (SELECT f.priorities FROM dagen_flow_flags f))
          AND t.run_id = x.run_id AND t.name = x.task
        LIMIT 1
    ) AS t ON true
    WHERE NOT x.if_queued OR t.status = 'QUEUED'
),
counts AS (
    SELECT input.tenant, count(*) AS k FROM input GROUP BY input.tenant
),
locked AS MATERIALIZED (
    SELECT g.tenant, g.block_ptr, g.block_fill, g.weight
    FROM dagen_tenant_groups g
    WHERE g.tenant = ANY(ARRAY(SELECT counts.tenant FROM counts))
    ORDER BY g.tenant
    FOR UPDATE
),
placed AS (
    -- The frontier is a scalar subquery, as in Enqueue.
    SELECT l.tenant, l.weight, c.k,
           greatest(l.block_ptr, s.frontier) AS first_block,
           CASE WHEN l.block_ptr >= s.frontier THEN least(l.block_fill, l.weight - 1) ELSE 0 END AS first_fill
    FROM locked l
    JOIN counts c ON c.tenant = l.tenant
    CROSS JOIN (SELECT (SELECT f.block FROM dagen_queue_frontier f) AS frontier) AS s
),
bumped AS (
    UPDATE dagen_tenant_groups g
    SET block_ptr = p.first_block + (p.first_fill + p.k) / p.weight,
        block_fill = (p.first_fill + p.k) % p.weight
    FROM placed p
    WHERE g.tenant = p.tenant
      AND g.tenant = ANY(ARRAY(SELECT locked.tenant FROM locked))
    RETURNING g.tenant, g.group_id, p.first_block, p.first_fill, p.weight
),
inserted AS (
    INSERT INTO dagen_ready (id, run_id, task, signature, priority)
    SELECT b.group_id + 1048576 * (b.first_block + (b.first_fill + row_number() OVER (PARTITION BY i.tenant ORDER BY i.ord) - 1) / b.weight),
           i.run_id, i.task, i.signature, i.priority
    FROM input i
    JOIN bumped b ON b.tenant = i.tenant
    ON CONFLICT (run_id, task) DO NOTHING
    RETURNING 1
),
counted AS (
    SELECT (SELECT count(*) FROM inserted) AS n
)
SELECT counted.n::bigint AS n,
       -- As in Enqueue.
       CASE WHEN counted.n > 0 AND (@force_notify::boolean OR NOT EXISTS (
                SELECT 1 FROM dagen_ready q
                WHERE q.id >= (SELECT f.block FROM dagen_queue_frontier f) * 1048576
            ))
            THEN pg_notify('dagen_ready.' || current_schema(), '') END::text AS notified
FROM counted;

-- name: ClaimTasks :many
-- Claims ready tasks in one statement, while the schema has no run
-- priority and no rate limit (dagen_flow_flags; then ClaimTasksFlow): takes the first rows of the queue in
-- id order whose signatures the worker serves (skipping rows other claims
-- hold, and leaving the others for workers that serve them), deletes them, starts the tasks
-- with a new attempt and their STARTED event, leases them to the worker (one
-- lease for the claim: lease is its id), moves the
-- frontier, and returns what the steps need: input, parents' results in the
-- task's parent order, and the run's failure for an onfailure task. A task
-- flagged run_shared or parents_shared has them in an earlier row.
--
-- Callers run KeepGenericPlan first, in the same transaction: left to
-- choose, Postgres planned every claim for its parameters (its estimate of
-- a generic plan, with LIMIT @max taken for a tenth of the queue, never
-- won), and paid for planning at every claim to reach the plan it would
-- have kept (see docs/performance.md, "Claims keep their generic plan").
-- The generic plan is the same one: the queue's rows in id order, each
-- task by key.
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
),
locked AS MATERIALIZED (
    -- The first rows of the queue, locked: see deleted.
    SELECT p.ctid::tid AS row_ctid, p.id, p.signature
    FROM dagen_ready p
    -- IN (SELECT …) under OR stays a hashed subplan: one hash lookup a
    -- row, where = ANY compares the row with the signatures one by one
    -- (a worker serves dozens, so the comparisons add up; see
    -- docs/performance.md, "The claim's signature filter is hashed").
    WHERE (cardinality(@signatures::text[]) = 0
           OR p.signature IN (SELECT unnest(@signatures::text[])))
      -- Once the schema has priorities or rate limits, ClaimTasksFlow
      -- claims: a store that did not know it yet claims nothing here,
      -- and learns it from ReadFlowFlags.
      AND NOT (SELECT f.rate_limits OR f.priorities FROM dagen_flow_flags f)
      -- Where the store's last full claim began (claimFloor): the
      -- index entries of the rows claims deleted before it, dead until
      -- a vacuum, are not read again.
      AND p.id >= @floor::bigint
    ORDER BY p.id
    LIMIT @max
    FOR UPDATE SKIP LOCKED
),
deleted AS (
    -- Takes the first rows of the queue and deletes them by ctid: a TID
    -- scan, whatever the statistics say (by id, a generic plan made while
    -- the queue was nearly empty read it whole, dead rows and all, at
    -- every claim; see docs/performance.md, "Claims take queue rows by
    -- ctid"). The rows are locked and the queue never updates a row, so
    -- each ctid is the row taken.
    --
    -- A task whose signature is in @extra_signatures takes as many slots
    -- more (@extra_slots: the children its completion will start on the
    -- worker, store.ClaimParams.Extra): the claim takes the rows, in
    -- order, whose slots fit in @max, and at least one. The rows locked
    -- past those stay locked only until the claim commits. Without extra
    -- signatures, the one-time filters leave the weighing out: every row
    -- locked is taken.
    DELETE FROM dagen_ready q
    WHERE q.ctid = ANY(ARRAY(
        SELECT l.row_ctid FROM locked l
        WHERE cardinality(@extra_signatures::text[]) = 0
        UNION ALL
        SELECT w.row_ctid
        FROM (
            SELECT l.row_ctid,
                   sum(1 + coalesce(x.slots, 0)) OVER (ORDER BY l.id) AS used,
                   row_number() OVER (ORDER BY l.id) AS n
            FROM locked l
            LEFT JOIN (SELECT unnest(@extra_signatures::text[]) AS signature,
                              unnest(@extra_slots::integer[]) AS slots) AS x
              ON x.signature = l.signature
            WHERE cardinality(@extra_signatures::text[]) > 0
        ) AS w
        WHERE w.used <= @max OR w.n = 1
    ))
    RETURNING q.id, q.run_id, q.task
),
claimed AS (
    -- The STARTED event is kept in the task's row (see dagen_tasks).
    UPDATE dagen_tasks t
    SET status = 'RUNNING',
        attempt = t.attempt + 1,
        worker = @worker::text,
        -- The claim's fence token (migration 014).
        claim = dagen_new_claim(),
        started_event = nextval('dagen_event_seq'),
        started_at = clock.now
    FROM deleted d, clock
    WHERE t.run_id = d.run_id AND t.name = d.task AND t.status = 'QUEUED'
    RETURNING d.id AS queue_id, t.run_id, t.name, t.kind, t.attempt, t.claim, t.parents, t.started_event, t.signature,
              t.each, t.item, t.element, t.children, t.ctid::tid AS row_ctid,
              -- How long it waited in the ready queue, on the store's clock.
              coalesce(extract(epoch FROM clock.now - t.queued_at), 0)::float8 AS queued_seconds
),
leased AS (
    -- One lease for the claim (migration 012), its id the least STARTED
    -- event id in it.
    INSERT INTO dagen_leases (id, token, worker, lease_until, run_ids, tasks, events)
    SELECT min(claimed.started_event), min(claimed.claim), @worker::text,
           min(clock.now) + make_interval(secs => @lease_seconds::float8),
           array_agg(claimed.run_id), array_agg(claimed.name), array_agg(claimed.started_event)
    FROM claimed, clock
    HAVING count(*) > 0
    RETURNING dagen_leases.id
),
frontier AS (
    UPDATE dagen_queue_frontier f
    SET block = m.block
    FROM (SELECT max(claimed.queue_id) / 1048576 AS block FROM claimed) m
    WHERE m.block > f.block
),
shared AS (
    -- Tasks of one run share its row, and tasks of one run with the same
    -- parents share their results (but elements, each of which has its own
    -- element for the parent it maps): the claim reads them once, for the
    -- first such task in queue order, and flags the others, which take
    -- them from it (a claim of a fan-out's children read their parent 50
    -- times a run, and the run as often; see sharedReads).
    SELECT claimed.queue_id, claimed.run_id, claimed.name, claimed.kind, claimed.attempt, claimed.claim, claimed.parents,
           claimed.signature, claimed.each, claimed.item, claimed.element, claimed.started_event,
           claimed.children, claimed.row_ctid, claimed.queued_seconds,
           claimed.run_id = ANY(@known::uuid[]) AS known,
           row_number() OVER (PARTITION BY claimed.run_id ORDER BY claimed.queue_id) AS run_rank,
           -- The tenant's last task of the claim is the one whose place is
           -- compared with the tenant's next (tenant_queued).
           row_number() OVER (PARTITION BY claimed.queue_id % 1048576 ORDER BY claimed.queue_id DESC) AS tenant_rank,
           CASE WHEN claimed.each = ''
                THEN row_number() OVER (PARTITION BY claimed.run_id, claimed.parents, claimed.each ORDER BY claimed.queue_id)
                ELSE 1
           END AS parents_rank
    FROM claimed
)
SELECT c.queue_id, c.run_id, c.name, c.kind, c.attempt, c.claim::bigint AS claim, c.signature, coalesce(c.element, 0)::integer AS element,
       (SELECT leased.id FROM leased)::bigint AS lease,
       (c.run_rank > 1)::boolean AS run_shared,
       coalesce(r.workflow, '')::text AS workflow, coalesce(r.tenant, '')::text AS tenant,
       -- A run's input is sent only to a worker that does not hold it.
       (CASE WHEN c.known THEN NULL ELSE r.input END)::bytea AS input,
       c.known::boolean AS input_omitted,
       coalesce(r.trace_parent, '')::text AS trace_parent,
       r.failure_step, r.failure_attempt, r.failure_message,
       c.parents::text[] AS parent_names,
       (c.parents_rank > 1)::boolean AS parents_shared,
       coalesce(par.statuses, '{}')::text[] AS parent_statuses,
       coalesce(par.outputs, '{}')::bytea[] AS parent_outputs,
       -- The claim view (migration 013).
       c.started_event::bigint AS started_event, c.children::text[] AS children, c.row_ctid::tid AS row_ctid,
       c.queued_seconds::float8 AS queued_seconds,
       -- Whether the tenant has a task queued in a later block than this
       -- one's place: a turn of its own still to come, so its results are
       -- a backlog's, not a light tenant's (the engine's light lane; see
       -- docs/performance.md, "The light lane"). A tenant with a later
       -- task in this claim has; else one lookup of its group.
       coalesce(tg.queued, c.tenant_rank > 1)::boolean AS tenant_queued
FROM shared c
LEFT JOIN LATERAL (
    -- One primary-key lookup, for a run's first task only.
    SELECT r.id, r.workflow, r.tenant, r.input, r.trace_parent, r.failure_step, r.failure_attempt, r.failure_message
    FROM dagen_runs r
    WHERE r.id = c.run_id AND c.run_rank = 1
    LIMIT 1
) r ON true
LEFT JOIN LATERAL (
    -- One primary-key lookup a parent (LIMIT 1 keeps it one: joined, the
    -- planner could scan all of the run's tasks for each claimed task),
    -- for the first task of those that share them only. An element gets
    -- its own element as the output of the parent it stands for (each),
    -- not that parent's whole output.
    SELECT array_agg(pt.status ORDER BY p.ord) AS statuses,
           array_agg(CASE WHEN p.name = c.each THEN c.item ELSE pt.output END ORDER BY p.ord) AS outputs
    FROM unnest(c.parents) WITH ORDINALITY AS p(name, ord)
    CROSS JOIN LATERAL (
        SELECT pt.status, pt.output FROM dagen_tasks pt
        WHERE pt.run_id = c.run_id AND pt.name = p.name
        LIMIT 1
    ) AS pt
    WHERE c.parents_rank = 1
) par ON true
LEFT JOIN LATERAL (
    -- A tenant of weight w has w places a block; its next is at
    -- block_ptr * w + block_fill.
    SELECT g.block_ptr * g.weight + g.block_fill > (c.queue_id / 1048576 + 1) * g.weight AS queued
    FROM dagen_tenant_groups g
    WHERE g.group_id = c.queue_id % 1048576 AND c.tenant_rank = 1
    LIMIT 1
) tg ON true
ORDER BY c.queue_id;

-- name: ClaimTasksFlow :many
-- ClaimTasks once the schema has run priorities or rate limits
-- (dagen_flow_flags): a tenant's place goes to its entry of the highest
-- priority, and a rate-limited entry's claim takes its bucket's tokens.
-- Otherwise as ClaimTasks.
--
-- Claims ready tasks in one statement: takes the first rows of the queue in
-- id order whose signatures the worker serves (skipping rows other claims
-- hold, and leaving the others for workers that serve them), deletes them, starts the tasks
-- with a new attempt and their STARTED event, leases them to the worker (one
-- lease for the claim: lease is its id), moves the
-- frontier, and returns what the steps need: input, parents' results in the
-- task's parent order, and the run's failure for an onfailure task. A task
-- flagged run_shared or parents_shared has them in an earlier row.
--
-- Callers run KeepGenericPlan first, in the same transaction: left to
-- choose, Postgres planned every claim for its parameters (its estimate of
-- a generic plan, with LIMIT @max taken for a tenth of the queue, never
-- won), and paid for planning at every claim to reach the plan it would
-- have kept (see docs/performance.md, "Claims keep their generic plan").
-- The generic plan is the same one: the queue's rows in id order, each
-- task by key.
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
),
tickets AS MATERIALIZED (
    -- The places claimed: the first rows of the queue, taken by ctid, a
    -- TID scan whatever the statistics say (by id, a generic plan made
    -- while the queue was nearly empty read it whole, dead rows and all,
    -- at every claim; see docs/performance.md, "Claims take queue rows by
    -- ctid"). The rows are locked, so each ctid is the row taken.
    SELECT p.ctid::tid AS row_ctid, p.id, p.priority, p.id % 1048576 AS grp
    FROM dagen_ready p
    -- IN (SELECT …) under OR stays a hashed subplan: one hash lookup a
    -- row, where = ANY compares the row with the signatures one by one
    -- (a worker serves dozens, so the comparisons add up; see
    -- docs/performance.md, "The claim's signature filter is hashed").
    WHERE (cardinality(@signatures::text[]) = 0
           OR p.signature IN (SELECT unnest(@signatures::text[])))
      AND p.id >= @floor::bigint -- as in ClaimTasks
    ORDER BY p.id
    LIMIT @max
    FOR UPDATE SKIP LOCKED
),
groups AS (
    -- Each tenant's places, and the least priority among its entries
    -- there.
    SELECT t.grp, count(*) AS n, min(t.priority) AS floor FROM tickets t GROUP BY t.grp
),
rivals AS MATERIALIZED (
    -- A tenant's entries of a higher priority than one of its places
    -- holds, best first, as many as it has places: only where the queue
    -- holds entries with a priority at all (one look at an index that is
    -- empty without them), and each tenant's one range of that index.
    SELECT g.grp, r.row_ctid, r.id, r.priority
    FROM groups g
    CROSS JOIN LATERAL (
        SELECT p.ctid::tid AS row_ctid, p.id, p.priority
        FROM dagen_ready p
        WHERE p.id % 1048576 = g.grp AND p.priority > 0 AND p.priority > g.floor
          AND (cardinality(@signatures::text[]) = 0 OR p.signature IN (SELECT unnest(@signatures::text[])))
        ORDER BY p.id % 1048576, p.priority DESC, p.id
        LIMIT g.n
        FOR UPDATE SKIP LOCKED
    ) AS r
    -- The index's order makes the look an index scan whatever the
    -- estimates: as EXISTS it was planned as a scan of the whole queue
    -- that stops at the first entry with a priority, which, where there
    -- was none, read every row at every claim. Not at all while the
    -- schema has no priority (dagen_flow_flags).
    WHERE (SELECT f.priorities FROM dagen_flow_flags f)
      AND (SELECT true FROM dagen_ready e WHERE e.priority > 0
           ORDER BY e.id % 1048576, e.priority DESC, e.id LIMIT 1)
),
ranked AS (
    -- The places' own entries and their rivals, ranked per tenant: its
    -- n best are claimed (picked).
    SELECT c.row_ctid, c.id, c.grp, c.place,
           row_number() OVER (PARTITION BY c.grp ORDER BY c.priority DESC, c.id) <= g.n AS picked
    FROM (
        SELECT t.row_ctid, t.id, t.priority, t.grp, true AS place FROM tickets t
        UNION ALL
        SELECT r.row_ctid, r.id, r.priority, r.grp, false FROM rivals r
        WHERE r.row_ctid <> ALL(ARRAY(SELECT t.row_ctid FROM tickets t))
    ) AS c
    JOIN groups g ON g.grp = c.grp
    WHERE EXISTS (SELECT 1 FROM rivals)
),
moves AS (
    -- A place whose entry was passed over keeps its entry: the entry takes
    -- the id of a rival picked in its stead (the tenant's places as they
    -- were, less the ones claimed), so it is not claimed ahead of its turn
    -- again.
    SELECT d.row_ctid, v.id
    FROM (SELECT r.row_ctid, r.grp, row_number() OVER (PARTITION BY r.grp ORDER BY r.id) AS k
          FROM ranked r WHERE r.place AND NOT r.picked) AS d
    JOIN (SELECT r.id, r.grp, row_number() OVER (PARTITION BY r.grp ORDER BY r.id) AS k
          FROM ranked r WHERE NOT r.place AND r.picked) AS v
      ON v.grp = d.grp AND v.k = d.k
),
moved AS (
    UPDATE dagen_ready q SET id = m.id
    FROM moves m
    WHERE q.ctid = m.row_ctid
),
deleted AS (
    DELETE FROM dagen_ready q
    WHERE q.ctid = ANY(ARRAY(
        SELECT t.row_ctid FROM tickets t WHERE NOT EXISTS (SELECT 1 FROM rivals)
        UNION ALL
        SELECT r.row_ctid FROM ranked r WHERE r.picked
    ))
    RETURNING q.id, q.run_id, q.task, q.rate_limit, q.rate_key, q.rate_units
),
spent AS (
    -- The tokens of the rate-limited entries claimed (an admission let
    -- them in only with tokens to spare): a row a bucket, counted into it
    -- by its next admission. Appended, so claims of one bucket lock
    -- nothing of it.
    INSERT INTO dagen_rate_spends (rate_limit, rate_key, spent_at, units)
    SELECT d.rate_limit, d.rate_key, clock.now, sum(d.rate_units)
    FROM deleted d, clock
    WHERE d.rate_limit IS NOT NULL
    GROUP BY d.rate_limit, d.rate_key, clock.now
),
claimed AS (
    -- The STARTED event is kept in the task's row (see dagen_tasks).
    UPDATE dagen_tasks t
    SET status = 'RUNNING',
        attempt = t.attempt + 1,
        worker = @worker::text,
        -- The claim's fence token (migration 014).
        claim = dagen_new_claim(),
        started_event = nextval('dagen_event_seq'),
        started_at = clock.now
    FROM deleted d, clock
    WHERE t.run_id = d.run_id AND t.name = d.task AND t.status = 'QUEUED'
    RETURNING d.id AS queue_id, t.run_id, t.name, t.kind, t.attempt, t.claim, t.parents, t.started_event, t.signature,
              t.each, t.item, t.element, t.children, t.ctid::tid AS row_ctid,
              -- How long it waited in the ready queue, on the store's clock.
              coalesce(extract(epoch FROM clock.now - t.queued_at), 0)::float8 AS queued_seconds
),
leased AS (
    -- One lease for the claim (migration 012), its id the least STARTED
    -- event id in it.
    INSERT INTO dagen_leases (id, token, worker, lease_until, run_ids, tasks, events)
    SELECT min(claimed.started_event), min(claimed.claim), @worker::text,
           min(clock.now) + make_interval(secs => @lease_seconds::float8),
           array_agg(claimed.run_id), array_agg(claimed.name), array_agg(claimed.started_event)
    FROM claimed, clock
    HAVING count(*) > 0
    RETURNING dagen_leases.id
),
frontier AS (
    UPDATE dagen_queue_frontier f
    SET block = m.block
    -- The places taken, not the entries claimed for them.
    FROM (SELECT max(tickets.id) / 1048576 AS block FROM tickets) m
    WHERE m.block > f.block
),
shared AS (
    -- Tasks of one run share its row, and tasks of one run with the same
    -- parents share their results (but elements, each of which has its own
    -- element for the parent it maps): the claim reads them once, for the
    -- first such task in queue order, and flags the others, which take
    -- them from it (a claim of a fan-out's children read their parent 50
    -- times a run, and the run as often; see sharedReads).
    SELECT claimed.queue_id, claimed.run_id, claimed.name, claimed.kind, claimed.attempt, claimed.claim, claimed.parents,
           claimed.signature, claimed.each, claimed.item, claimed.element, claimed.started_event,
           claimed.children, claimed.row_ctid, claimed.queued_seconds,
           claimed.run_id = ANY(@known::uuid[]) AS known,
           row_number() OVER (PARTITION BY claimed.run_id ORDER BY claimed.queue_id) AS run_rank,
           -- The tenant's last task of the claim is the one whose place is
           -- compared with the tenant's next (tenant_queued).
           row_number() OVER (PARTITION BY claimed.queue_id % 1048576 ORDER BY claimed.queue_id DESC) AS tenant_rank,
           CASE WHEN claimed.each = ''
                THEN row_number() OVER (PARTITION BY claimed.run_id, claimed.parents, claimed.each ORDER BY claimed.queue_id)
                ELSE 1
           END AS parents_rank
    FROM claimed
)
SELECT c.queue_id, c.run_id, c.name, c.kind, c.attempt, c.claim::bigint AS claim, c.signature, coalesce(c.element, 0)::integer AS element,
       (SELECT leased.id FROM leased)::bigint AS lease,
       (c.run_rank > 1)::boolean AS run_shared,
       coalesce(r.workflow, '')::text AS workflow, coalesce(r.tenant, '')::text AS tenant,
       -- A run's input is sent only to a worker that does not hold it.
       (CASE WHEN c.known THEN NULL ELSE r.input END)::bytea AS input,
       c.known::boolean AS input_omitted,
       coalesce(r.trace_parent, '')::text AS trace_parent,
       r.failure_step, r.failure_attempt, r.failure_message,
       c.parents::text[] AS parent_names,
       (c.parents_rank > 1)::boolean AS parents_shared,
       coalesce(par.statuses, '{}')::text[] AS parent_statuses,
       coalesce(par.outputs, '{}')::bytea[] AS parent_outputs,
       -- The claim view (migration 013).
       c.started_event::bigint AS started_event, c.children::text[] AS children, c.row_ctid::tid AS row_ctid,
       c.queued_seconds::float8 AS queued_seconds,
       -- Whether the tenant has a task queued in a later block than this
       -- one's place: a turn of its own still to come, so its results are
       -- a backlog's, not a light tenant's (the engine's light lane; see
       -- docs/performance.md, "The light lane"). A tenant with a later
       -- task in this claim has; else one lookup of its group.
       coalesce(tg.queued, c.tenant_rank > 1)::boolean AS tenant_queued
FROM shared c
LEFT JOIN LATERAL (
    -- One primary-key lookup, for a run's first task only.
    SELECT r.id, r.workflow, r.tenant, r.input, r.trace_parent, r.failure_step, r.failure_attempt, r.failure_message
    FROM dagen_runs r
    WHERE r.id = c.run_id AND c.run_rank = 1
    LIMIT 1
) r ON true
LEFT JOIN LATERAL (
    -- One primary-key lookup a parent (LIMIT 1 keeps it one: joined, the
    -- planner could scan all of the run's tasks for each claimed task),
    -- for the first task of those that share them only. An element gets
    -- its own element as the output of the parent it stands for (each),
    -- not that parent's whole output.
    SELECT array_agg(pt.status ORDER BY p.ord) AS statuses,
           array_agg(CASE WHEN p.name = c.each THEN c.item ELSE pt.output END ORDER BY p.ord) AS outputs
    FROM unnest(c.parents) WITH ORDINALITY AS p(name, ord)
    CROSS JOIN LATERAL (
        SELECT pt.status, pt.output FROM dagen_tasks pt
        WHERE pt.run_id = c.run_id AND pt.name = p.name
        LIMIT 1
    ) AS pt
    WHERE c.parents_rank = 1
) par ON true
LEFT JOIN LATERAL (
    -- A tenant of weight w has w places a block; its next is at
    -- block_ptr * w + block_fill.
    SELECT g.block_ptr * g.weight + g.block_fill > (c.queue_id / 1048576 + 1) * g.weight AS queued
    FROM dagen_tenant_groups g
    WHERE g.group_id = c.queue_id % 1048576 AND c.tenant_rank = 1
    LIMIT 1
) tg ON true
ORDER BY c.queue_id;

-- name: DeleteReadyForRuns :exec
-- Removes the queue entries of runs that failed or were cancelled. Callers
-- run it before they touch the runs' queued tasks: a claim locks a queue
-- row before its task, so this order cannot deadlock with one.
-- Their tasks waiting for a rate limit's tokens go too.
WITH waiting AS (
    DELETE FROM dagen_rate_waiting w WHERE w.run_id = ANY(@run_ids::uuid[])
)
DELETE FROM dagen_ready WHERE run_id = ANY(@run_ids::uuid[]);

-- name: NotifyChannel :one
-- The channel Enqueue notifies: one per schema.
SELECT ('dagen_ready.' || current_schema())::text AS channel;

-- name: QueueHead :one
-- Counts the entries in the first block of the ready queue: the places the
-- fair queue hands out in its next round (one a tenant with work, w for a
-- tenant of weight w). A sharded store splits a claim between its shards
-- by it, so that every tenant, on whatever shard, gets a place a round.
-- Two probes of the id index, then at most one block of it.
SELECT count(*)::integer AS places
FROM dagen_ready
WHERE id < (SELECT (min(r.id) / 1048576 + 1) * 1048576 FROM dagen_ready r);
