-- name: RecordSignatures :exec
-- Keeps what signatures mean (see dagen_signatures). A signature's
-- description never changes, so one recorded already is left alone.
INSERT INTO dagen_signatures (signature, workflow, step, kind, input_type, output_type, parents, child, recorded_at)
SELECT x.signature, x.workflow, x.step, x.kind, x.input_type, x.output_type, x.parents::jsonb, x.child,
       coalesce(sqlc.narg('now')::timestamptz, now())
FROM (
    SELECT unnest(@signatures::text[]) AS signature,
           unnest(@workflows::text[]) AS workflow,
           unnest(@steps::text[]) AS step,
           unnest(@kinds::text[]) AS kind,
           unnest(@input_types::text[]) AS input_type,
           unnest(@output_types::text[]) AS output_type,
           unnest(@parents::text[]) AS parents,
           unnest(@children::text[]) AS child
) AS x
ORDER BY x.signature
ON CONFLICT (signature) DO NOTHING;

-- name: Serve :exec
-- Publishes the signatures a worker serves in its record. A new record is
-- not alive until the worker's first heartbeat.
INSERT INTO dagen_workers (id, heartbeat_at, alive_until, signatures, concurrency)
SELECT @worker::text, clock.now, clock.now, @signatures::text[], @concurrency::integer
FROM (SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now) AS clock
ON CONFLICT (id) DO UPDATE SET signatures = excluded.signatures, concurrency = excluded.concurrency;

-- name: UnservedTasks :many
-- The QUEUED tasks of a run whose signature no live worker serves, with
-- when they were queued: a task queued again (a retry, a rescue) keeps that
-- time in the log, not in its row.
SELECT t.name, t.signature, r.workflow,
       coalesce(t.queued_at, (
           SELECT max(e.at) FROM dagen_events e
           WHERE e.run_id = t.run_id AND e.task = t.name AND e.type = 'QUEUED'
       ))::timestamptz AS queued_at
FROM dagen_tasks t
JOIN dagen_runs r ON r.id = t.run_id
WHERE t.run_id = @run_id AND t.status = 'QUEUED'
  AND NOT EXISTS (
      SELECT 1 FROM dagen_workers w
      WHERE w.alive_until > coalesce(sqlc.narg('now')::timestamptz, now())
        AND t.signature = ANY(w.signatures)
  )
ORDER BY t.seq;

-- name: NoJIT :exec
-- Makes the statements after it in this transaction run without JIT
-- compilation: ReportUnserved is costed for a queue whose every entry
-- nobody serves, past the thresholds where Postgres JIT-compiles, inlines
-- and optimizes it, and each leader's round paid seconds of compilation
-- for a look that, most rounds, finds nothing (see docs/performance.md,
-- "No JIT compilation of large batches").
SELECT set_config('jit', 'off', true);

-- name: ReportUnserved :many
-- Records up to @max queue entries whose signature no live worker serves,
-- queued more than @grace_seconds ago and not recorded yet, and returns them
-- with their attempt, for their WAITING events; records of entries gone from
-- the queue are dropped. Only the leader runs it; it reads the whole ready
-- queue, which holds only runnable tasks, and locks none of its rows, so
-- claims never pass an entry by because of it. Two leaders at once (a
-- failover) record an entry once: ON CONFLICT. The entries nobody serves
-- are found first (unserved, materialized: most rounds there are none) and
-- only theirs are looked up in dagen_tasks, by key (a LATERAL that cannot
-- be flattened): a planner that joined first would read the whole history.
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
),
served AS (
    SELECT DISTINCT unnest(w.signatures) AS signature
    FROM dagen_workers w, clock
    WHERE w.alive_until > clock.now
),
gone AS (
    DELETE FROM dagen_waiting_reported w
    WHERE NOT EXISTS (SELECT 1 FROM dagen_ready q WHERE q.id = w.id)
),
unserved AS MATERIALIZED (
    SELECT q.id, q.run_id, q.task, q.signature
    FROM dagen_ready q
    WHERE q.signature NOT IN (SELECT served.signature FROM served)
      AND NOT EXISTS (SELECT 1 FROM dagen_waiting_reported w WHERE w.id = q.id)
),
picked AS (
    SELECT u.id, u.run_id, u.task, u.signature, t.attempt
    FROM unserved u
    CROSS JOIN LATERAL (
        SELECT t.attempt, coalesce(t.queued_at, (
                   SELECT max(e.at) FROM dagen_events e
                   WHERE e.run_id = t.run_id AND e.task = t.name AND e.type = 'QUEUED'
               )) AS queued_at
        FROM dagen_tasks t
        WHERE t.run_id = u.run_id AND t.name = u.task
        LIMIT 1
    ) AS t
    WHERE t.queued_at < (SELECT clock.now FROM clock) - make_interval(secs => @grace_seconds::float8)
    ORDER BY u.id
    LIMIT @max
),
recorded AS (
    INSERT INTO dagen_waiting_reported (id)
    SELECT picked.id FROM picked
    ON CONFLICT (id) DO NOTHING
    RETURNING dagen_waiting_reported.id
)
SELECT picked.run_id, picked.task, picked.signature, picked.attempt
FROM picked
JOIN recorded ON recorded.id = picked.id;

-- name: InFlight :many
-- Per signature, the RUNNING runs with an unfinished task of it (a run has
-- one task per signature but for the elements of a mapped step, which
-- count as their step), a few of their ids, and what the
-- signature means when a worker recorded it. A PENDING onfailure task is
-- not waited on. For operators before a deploy: it reads every RUNNING run.
SELECT t.signature, r.workflow, split_part(t.name, '[', 1)::text AS step, (t.signature = ANY(@served::text[]))::boolean AS served,
       count(DISTINCT t.run_id)::integer AS runs,
       (array_agg(DISTINCT t.run_id ORDER BY t.run_id))[1:@sample::integer]::uuid[] AS sample,
       s.kind AS info_kind, s.input_type, s.output_type, coalesce(s.parents::text, '')::text AS parents,
       coalesce(s.child, '')::text AS child,
       (s.signature IS NOT NULL)::boolean AS known
FROM dagen_runs r
JOIN dagen_tasks t ON t.run_id = r.id
LEFT JOIN dagen_signatures s ON s.signature = t.signature
WHERE r.status IN ('QUEUED', 'RUNNING')
  AND t.status IN ('PENDING', 'QUEUED', 'RUNNING', 'SLEEPING', 'BACKOFF', 'MAPPING', 'AWAITING')
  AND NOT (t.kind = 'onfailure' AND t.status = 'PENDING')
GROUP BY t.signature, r.workflow, split_part(t.name, '[', 1), s.signature
ORDER BY r.workflow, split_part(t.name, '[', 1), t.signature;

-- name: InFlightRuns :many
-- Per workflow, the QUEUED and RUNNING runs, and those with an unfinished task whose
-- signature is not in @served (code serving @served could not finish
-- them), with a few of their ids.
SELECT r.workflow, count(*)::integer AS runs,
       count(*) FILTER (WHERE x.stranded)::integer AS stranded,
       coalesce((array_agg(r.id ORDER BY r.id) FILTER (WHERE x.stranded))[1:@sample::integer], '{}')::uuid[] AS sample
FROM dagen_runs r
CROSS JOIN LATERAL (
    SELECT bool_or(NOT (t.signature = ANY(@served::text[]))) AS stranded
    FROM dagen_tasks t
    WHERE t.run_id = r.id
      AND t.status IN ('PENDING', 'QUEUED', 'RUNNING', 'SLEEPING', 'BACKOFF', 'MAPPING', 'AWAITING')
      AND NOT (t.kind = 'onfailure' AND t.status = 'PENDING')
) AS x
WHERE r.status IN ('QUEUED', 'RUNNING')
GROUP BY r.workflow
ORDER BY r.workflow;

-- name: GetSignatures :many
SELECT signature, workflow, step, kind, input_type, output_type, parents::text AS parents, child
FROM dagen_signatures
WHERE signature = ANY(@signatures::text[])
ORDER BY signature;
