-- name: InsertTasks :exec
-- parents and children are Postgres array literals, one per task, because
-- unnest cannot take an array of arrays of different lengths. A task that
-- starts QUEUED keeps its QUEUED event in its row.
--
-- A task given as STARTING (StartRuns) starts RUNNING when its tenant has
-- nothing in the ready queue past the head block (its block pointer is at
-- most one past the frontier), as the fair queue would hand it out next;
-- otherwise it starts QUEUED, and Enqueue, told to check, queues it. A
-- started task is at attempt 1 for @worker, keeps its QUEUED and then its
-- STARTED event and a claim token (migration 014), and gets the lease of
-- the tasks started.
--
-- The lists are read through subqueries, so that Postgres keeps one plan
-- (as for GetTasks).
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
),
inserted AS (
    INSERT INTO dagen_tasks (run_id, name, seq, kind, parents, children, pending_parents, status, max_attempts,
                             signature, attempt, claim, worker, queued_event, queued_at, started_event, started_at,
                             priority, rate_limit, rate_key, rate_units)
    SELECT t.run_id, t.name, t.seq, t.kind, t.parents::text[], t.children::text[],
           t.pending_parents, t.state, t.max_attempts, t.signature,
           CASE WHEN t.state = 'RUNNING' THEN 1 ELSE 0 END,
           CASE WHEN t.state = 'RUNNING' THEN dagen_new_claim() ELSE 0 END,
           CASE WHEN t.state = 'RUNNING' THEN @worker::text ELSE '' END,
           -- Target entries are evaluated in order: QUEUED's id comes first.
           CASE WHEN t.state IN ('QUEUED', 'RUNNING') THEN nextval('dagen_event_seq') END,
           CASE WHEN t.state IN ('QUEUED', 'RUNNING') THEN clock.now END,
           CASE WHEN t.state = 'RUNNING' THEN nextval('dagen_event_seq') END,
           CASE WHEN t.state = 'RUNNING' THEN clock.now END,
           t.priority, nullif(t.rate_limit, ''), CASE WHEN t.rate_limit <> '' THEN t.rate_key END,
           CASE WHEN t.rate_limit <> '' THEN t.rate_units END
    FROM (
        SELECT x.*,
               CASE WHEN x.status <> 'STARTING' THEN x.status
                    WHEN coalesce((SELECT g.block_ptr FROM dagen_tenant_groups g WHERE g.tenant = x.tenant), 0)
                         <= (SELECT f.block FROM dagen_queue_frontier f) + 1 THEN 'RUNNING'
                    ELSE 'QUEUED'
               END AS state
        FROM (
            SELECT unnest((SELECT @run_ids::uuid[])) AS run_id,
                   unnest((SELECT @names::text[])) AS name,
                   unnest((SELECT @seqs::integer[])) AS seq,
                   unnest((SELECT @kinds::text[])) AS kind,
                   unnest((SELECT @parents::text[])) AS parents,
                   unnest((SELECT @children::text[])) AS children,
                   unnest((SELECT @pending_parents::integer[])) AS pending_parents,
                   unnest((SELECT @statuses::text[])) AS status,
                   unnest((SELECT @max_attempts::integer[])) AS max_attempts,
                   unnest((SELECT @signatures::text[])) AS signature,
                   unnest((SELECT @tenants::text[])) AS tenant,
                   unnest((SELECT @priorities::smallint[])) AS priority,
                   unnest((SELECT @rate_limits::text[])) AS rate_limit,
                   unnest((SELECT @rate_keys::text[])) AS rate_key,
                   unnest((SELECT @rate_units::integer[])) AS rate_units
        ) AS x
    ) AS t, clock
    RETURNING dagen_tasks.run_id, dagen_tasks.name, dagen_tasks.started_event, dagen_tasks.claim
)
-- One lease for the tasks started, as in ClaimTasks.
INSERT INTO dagen_leases (id, token, worker, lease_until, run_ids, tasks, events)
SELECT min(i.started_event), min(i.claim), @worker::text,
       min(clock.now) + make_interval(secs => @lease_seconds::float8),
       array_agg(i.run_id), array_agg(i.name), array_agg(i.started_event)
FROM inserted i, clock
WHERE i.started_event IS NOT NULL
HAVING count(*) > 0;

-- name: StartedTasks :many
-- The tasks among the keys that are RUNNING: after InsertTasks in the same
-- transaction, the ones it started, with their STARTED event ids (the least
-- is their lease's id), claim tokens, children and rows (their claim
-- views, migration 013). One lookup a key, as in GetTasks.
SELECT k.run_id::uuid AS run_id, k.name::text AS name, t.started_event::bigint AS started_event, t.claim::bigint AS claim,
       t.children::text[] AS children, t.row_ctid::tid AS row_ctid
FROM (SELECT unnest((SELECT @run_ids::uuid[])) AS run_id, unnest((SELECT @names::text[])) AS name) AS k
CROSS JOIN LATERAL (
    SELECT t.status, t.started_event, t.claim, t.children, t.ctid::tid AS row_ctid FROM dagen_tasks t WHERE t.run_id = k.run_id AND t.name = k.name LIMIT 1
) AS t
WHERE t.status = 'RUNNING';

-- name: GetTasks :many
-- Reads tasks by key, and where each row is (row_ctid, UpdateTasks's
-- hint). Callers hold the lock of the tasks' runs, which every
-- writer of a task other than a claim takes first. Each key is one lookup
-- of the primary key (LIMIT 1 keeps the planner from hashing the whole
-- table instead, which it prefers while the table is small). The key list
-- is read through a subquery so that no plan is costed on its length: a
-- plan made for one batch then costs what a generic plan costs, and
-- Postgres keeps the generic plan rather than planning every execution,
-- which cost much of the database's time in batches of a few tasks (see
-- docs/performance.md, "Statements keep one plan").
SELECT t.run_id, t.name, t.kind, t.children, t.status, t.attempt, t.claim, t.max_attempts, t.signature,
       t.error, t.reason, t.wake_at, t.worker,
       t.queued_event, t.queued_at, t.started_event, t.started_at,
       t.pending_parents, t.elements, t.next_element, t.map_limit, (t.signal IS NOT NULL)::boolean AS held,
       t.row_ctid
FROM (SELECT unnest((SELECT @run_ids::uuid[])) AS run_id, unnest(@names::text[]) AS name) AS k
CROSS JOIN LATERAL (
    SELECT t.*, t.ctid::tid AS row_ctid FROM dagen_tasks t WHERE t.run_id = k.run_id AND t.name = k.name LIMIT 1
) AS t;

-- name: UpdateTasks :exec
-- Writes the new state of tasks whose transition was decided by the caller
-- (under the run lock). Output is kept when the new one is NULL. A task
-- that completes keeps its COMPLETED event in its row; one that starts a
-- new round (its old round's events written out by the caller) forgets the
-- events its row kept.
--
-- A task decided on what its claim returned (a claim view: @expect_claim
-- is the claim's token, migration 014, 0 for a task read in this
-- transaction) is written only while it is still RUNNING under that claim,
-- and keeps its error, reason and wake time (a completion
-- does not change them, and the view does not hold them). One that moved
-- on makes the statement fail with dagen_claim_moved (migration 013): the
-- caller rolls back and decides again on the rows it reads.
--
-- The ctid list only narrows the scan: it holds the batch's rows, each
-- where GetTasks found it (@hints) if the row is still there, else found
-- with one primary-key lookup (LIMIT 1 keeps each one a lookup). A hint
-- is one page read in the key's range (the run_id condition prunes the
-- others), the lookup four; a row that moved since it was read (this
-- transaction wrote it, or a claim did since) fails the key check at its
-- old place, and a NULL hint finds nothing: both are looked up. Joined by
-- key alone, the planner hashed the whole table while it was small. The
-- key stays the join condition, so a row is still matched by key. The key
-- lists are read through subqueries, as in GetTasks, so the plan is kept
-- rather than made at each execution.
WITH u AS (
    -- A kept COMPLETED event takes its id here, in input order, so that a
    -- batch logs its tasks' COMPLETED events in the order the caller
    -- decided them (the transition core's order), whatever order the
    -- update visits the rows in.
    SELECT v.*, CASE WHEN v.log_completed THEN nextval('dagen_event_seq') END AS completed_event
    FROM (
    SELECT unnest((SELECT @run_ids::uuid[])) AS run_id,
           unnest(@names::text[]) AS name,
           unnest(@statuses::text[]) AS status,
           unnest(@outputs::bytea[]) AS output,
           unnest(@errors::text[]) AS error,
           unnest(@reasons::text[]) AS reason,
           unnest(@wake_ats::timestamptz[]) AS wake_at,
           unnest(@finished_ats::timestamptz[]) AS finished_at,
           unnest(@log_completed::boolean[]) AS log_completed,
           unnest(@new_rounds::boolean[]) AS new_round,
           unnest(@expect_claim::bigint[]) AS expect_claim
    ) AS v
),
written AS (
    UPDATE dagen_tasks t
    SET status = u.status,
        output = coalesce(u.output, t.output),
        error = CASE WHEN u.expect_claim = 0 THEN u.error ELSE t.error END,
        reason = CASE WHEN u.expect_claim = 0 THEN u.reason ELSE t.reason END,
        wake_at = CASE WHEN u.expect_claim = 0 THEN u.wake_at ELSE t.wake_at END,
        finished_at = u.finished_at,
        completed_event = CASE WHEN u.log_completed THEN u.completed_event ELSE t.completed_event END,
        queued_event = CASE WHEN u.new_round THEN NULL ELSE t.queued_event END,
        queued_at = CASE WHEN u.new_round THEN NULL ELSE t.queued_at END,
        started_event = CASE WHEN u.new_round THEN NULL ELSE t.started_event END,
        started_at = CASE WHEN u.new_round THEN NULL ELSE t.started_at END
    FROM u
    WHERE t.run_id = u.run_id AND t.name = u.name
      -- The token, not the STARTED event id: a sequence rolls back with
      -- the history (migration 014).
      AND (u.expect_claim = 0 OR (t.status = 'RUNNING' AND t.claim = u.expect_claim))
      AND t.ctid = ANY(ARRAY(
          SELECT coalesce(
              (SELECT t2.ctid FROM dagen_tasks t2 WHERE t2.ctid = k.hint AND t2.run_id = k.run_id AND t2.name = k.name),
              (SELECT t2.ctid FROM dagen_tasks t2 WHERE t2.run_id = k.run_id AND t2.name = k.name LIMIT 1))
          FROM (SELECT unnest((SELECT @run_ids::uuid[])) AS run_id, unnest(@names::text[]) AS name,
                       unnest(@hints::tid[]) AS hint) AS k
      ))
    RETURNING t.run_id, t.name
)
SELECT dagen_claim_moved(u.run_id, u.name)
FROM u
WHERE u.expect_claim <> 0
  AND NOT EXISTS (SELECT 1 FROM written w WHERE w.run_id = u.run_id AND w.name = u.name);

-- name: DecrementChildren :many
-- Counts pending parents down, one per (run, child) entry, and marks the
-- children that reach zero QUEUED. The caller holds the locks of the
-- children's runs (every writer of a run's tasks but a claim takes them
-- first, in id order, and a claim never touches a PENDING task), so no two
-- transactions count down the same children at once; UPDATE … RETURNING
-- makes exactly one completion see a child reach zero. A child that becomes
-- QUEUED keeps its QUEUED event, at now, in its row. The ctid list narrows
-- the scan to one lookup a child, and the key lists are read through
-- subqueries so that the plan is kept, as in UpdateTasks (planned at each
-- execution, it cost every completion with children; see
-- docs/performance.md, "Statements keep one plan").
-- Only the lookups check that a child is PENDING: checked on the rows taken
-- by ctid, the check's selectivity (few PENDING tasks in a range analyzed
-- once most of its runs had finished) made the planner take those rows for
-- one or two and compare every count with every row, which took most of
-- the statement's time (see docs/performance.md, "The countdown checks
-- PENDING on its lookups"). Unchecked, they are as many as the keys, and
-- the two are hashed. The check holds to the update: under the children's
-- run locks, no other transaction changes a PENDING child meanwhile.
--
-- A child's QUEUED event id is taken in d, in the order of the child's
-- last entry (the parent that brings it to zero, in the caller's order),
-- so that a batch logs the QUEUED events of the children it makes ready
-- in the transition core's order, whatever order the update visits the
-- rows in. A child that does not reach zero leaves its id unused.
WITH d AS MATERIALIZED (
    SELECT g.run_id, g.child, g.n, nextval('dagen_event_seq') AS queued_event
    FROM (
        SELECT x.run_id, x.child, count(*)::integer AS n, max(x.ord) AS ord
        FROM (SELECT unnest((SELECT @run_ids::uuid[])) AS run_id, unnest((SELECT @children::text[])) AS child,
                     generate_series(1, cardinality((SELECT @run_ids::uuid[]))) AS ord) AS x
        GROUP BY x.run_id, x.child
    ) AS g
    ORDER BY g.ord
)
UPDATE dagen_tasks t
SET pending_parents = t.pending_parents - d.n,
    status = CASE WHEN t.pending_parents - d.n = 0 THEN 'QUEUED' ELSE t.status END,
    queued_event = CASE WHEN t.pending_parents - d.n = 0 THEN d.queued_event END,
    queued_at = CASE WHEN t.pending_parents - d.n = 0 THEN coalesce(sqlc.narg('now')::timestamptz, now()) END
FROM d
WHERE t.run_id = d.run_id AND t.name = d.child
  AND t.ctid = ANY(ARRAY(
      SELECT x.ctid
      FROM (SELECT unnest((SELECT @run_ids::uuid[])) AS run_id, unnest((SELECT @children::text[])) AS name) AS k
      CROSS JOIN LATERAL (
          SELECT t2.ctid FROM dagen_tasks t2
          WHERE t2.run_id = k.run_id AND t2.name = k.name AND t2.status = 'PENDING'
          LIMIT 1
      ) AS x
  ))
RETURNING t.run_id, t.name, t.status, t.signature,
          -- Every parent of the child was counted down here: its parents
          -- are all in the caller's batch.
          (cardinality(t.parents) = d.n)::boolean AS parents_here,
          t.ctid::tid AS row_ctid,
          -- A rate-limited child waits for tokens: never continued.
          (t.rate_limit IS NOT NULL AND t.kind <> 'map')::boolean AS rated;

-- name: QueueOnFailure :many
-- Marks the pending onfailure tasks of failed runs QUEUED.
UPDATE dagen_tasks
SET status = 'QUEUED'
WHERE run_id = ANY(@run_ids::uuid[]) AND kind = 'onfailure' AND status = 'PENDING'
RETURNING run_id, name, attempt, signature;

-- name: CancelTasks :many
-- Cancels the unfinished tasks of runs, either only the waiting ones (a
-- failed run: running attempts may finish, the onfailure task is spared)
-- or all of them (a cancelled run). seq and element order the tasks'
-- CANCELLED events as the run lists its tasks.
UPDATE dagen_tasks
SET status = 'CANCELLED', finished_at = @now::timestamptz
WHERE run_id = ANY(@run_ids::uuid[])
  AND status = ANY(@statuses::text[])
  AND (@include_onfailure::boolean OR kind <> 'onfailure')
RETURNING run_id, seq, coalesce(element, -1)::integer AS element, name, attempt;

-- name: RescueCandidates :many
-- The tasks of leases that ended, earliest lease first, each lease whole
-- and in its order, with how long their worker is known to be alive (NULL:
-- not heartbeating): the leases that begin within the first @max tasks.
-- An entry is a task's key and the STARTED event id of the attempt the
-- lease covers; the caller checks which tasks still hold it. The table
-- holds the leases of claims whose tasks may still run, and only the
-- leader reads it this way.
SELECT l.id, l.token, l.lease_until, w.alive_until, e.run_id::uuid AS run_id, e.task::text AS name, e.event::bigint AS event
FROM (
    SELECT l.id, l.token, l.worker, l.lease_until, l.run_ids, l.tasks, l.events,
           coalesce(sum(cardinality(l.events)) OVER (ORDER BY l.lease_until, l.id
                                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
    FROM dagen_leases l
    WHERE l.lease_until <= coalesce(sqlc.narg('now')::timestamptz, now())
) l
LEFT JOIN dagen_workers w ON w.id = l.worker
CROSS JOIN LATERAL (
    SELECT l.run_ids[i.i] AS run_id, l.tasks[i.i] AS task, l.events[i.i] AS event, i.i AS ord
    FROM generate_subscripts(l.events, 1) AS i(i)
) AS e
WHERE l.before < @max::bigint
ORDER BY l.lease_until, l.id, e.ord;

-- name: WorkerTasks :many
-- The tasks leased to one worker, once each (some of which may have ended
-- since, or been claimed again).
SELECT DISTINCT e.run_id::uuid AS run_id, e.task::text AS name
FROM dagen_leases l
CROSS JOIN LATERAL (
    SELECT l.run_ids[i.i] AS run_id, l.tasks[i.i] AS task
    FROM generate_subscripts(l.events, 1) AS i(i)
) AS e
WHERE l.worker = @worker;

-- name: ExtendLeases :exec
-- Moves leases up to their worker's own deadline.
UPDATE dagen_leases l
SET lease_until = k.lease_until
FROM (
    SELECT unnest(@ids::bigint[]) AS id,
           unnest(@lease_untils::timestamptz[]) AS lease_until
) AS k
WHERE l.id = k.id AND l.id = ANY(ARRAY(SELECT unnest(@ids::bigint[])));

-- name: PlanEachExecution :exec
-- Makes the statements after it in this transaction be planned for their
-- parameters and the tables as they are, each time they run, instead of
-- with a plan cached when a table was empty (see DeleteLeases).
SELECT set_config('plan_cache_mode', 'force_custom_plan', true);

-- name: KeepGenericPlan :exec
-- Makes the statements after it in this transaction run the generic plan
-- Postgres caches for them on the connection, not a plan made for their
-- parameters at each execution (see ClaimTasks).
SELECT set_config('plan_cache_mode', 'force_generic_plan', true);

-- name: GenericPlanBegin :exec
-- KeepGenericPlan for the statements up to GenericPlanEnd, which gives the
-- transaction the plan cache mode it had before (kept meanwhile in a
-- setting of dagen's own; see Store.enqueue).
SELECT set_config('dagen.plan_cache_mode', current_setting('plan_cache_mode'), true),
       set_config('plan_cache_mode', 'force_generic_plan', true);

-- name: GenericPlanEnd :exec
-- See GenericPlanBegin.
SELECT set_config('plan_cache_mode', current_setting('dagen.plan_cache_mode'), true);

-- name: FindByIndexBegin :exec
-- Makes the statements up to FindByIndexEnd take an index wherever one
-- serves, whatever the size of the table when their plan was made: a
-- generic plan made while a churning table was nearly empty would read it
-- whole once it holds thousands of dead rows (see DeleteLeases). The
-- setting the transaction had is kept meanwhile in a setting of dagen's
-- own: a plan made under it is kept, so no other statement may be planned
-- while it holds.
SELECT set_config('dagen.enable_seqscan', current_setting('enable_seqscan'), true),
       set_config('enable_seqscan', 'off', true);

-- name: FindByIndexEnd :exec
-- See FindByIndexBegin.
SELECT set_config('enable_seqscan', current_setting('dagen.enable_seqscan'), true);

-- name: DeleteLeases :exec
-- Deletes leases by id and token (migration 014: an id alone may name
-- another claim's lease after a rollback) whose every attempt the store
-- saw answered, when they were taken on this server's incarnation
-- (migration 016): a lease from before a failover or a restart may cover
-- an attempt whose answer was lost with the old history, and is how its
-- worker's heartbeat finds and releases that attempt (NotHeldTasks); the
-- leader deletes it once it expired and no task holds it. dagen_leases
-- churns a row per claim and may hold many dead rows between two vacuums,
-- while its statistics may still say it is empty: a generic plan made then
-- scans the table. Callers run it between FindByIndexBegin and
-- FindByIndexEnd: the plan finds each lease by key, and is kept (planned
-- at each execution instead, it cost a completion more than it ran; see
-- docs/performance.md, "Leases removed by key").
DELETE FROM dagen_leases l
USING (SELECT unnest(@ids::bigint[]) AS id, unnest(@tokens::bigint[]) AS token) AS k
WHERE l.id = k.id AND l.token = k.token AND l.id = ANY(@ids::bigint[])
  AND l.server_start = pg_postmaster_start_time();

-- name: ListTasks :many
-- A run's tasks in creation order, each mapped task's elements right after
-- it (they have its seq).
SELECT name, kind, parents, signature, status, attempt, claim, output, error, reason, wake_at, worker, finished_at,
       elements, coalesce(element, 0)::integer AS element
FROM dagen_tasks
WHERE run_id = @run_id
ORDER BY seq, element NULLS FIRST;
