-- name: SetParents :exec
-- Links child runs just created to the task attempts that started them.
UPDATE dagen_runs r
SET parent_run = u.parent_run, parent_task = u.parent_task, parent_attempt = u.parent_attempt,
    parent_claim = u.parent_claim, result_task = nullif(u.result_task, '')
FROM (
    SELECT unnest(@ids::uuid[]) AS id,
           unnest(@parent_runs::uuid[]) AS parent_run,
           unnest(@parent_tasks::text[]) AS parent_task,
           unnest(@parent_attempts::integer[]) AS parent_attempt,
           unnest(@parent_claims::bigint[]) AS parent_claim,
           unnest(@result_tasks::text[]) AS result_task
) AS u
WHERE r.id = u.id AND r.id = ANY(ARRAY(SELECT unnest(@ids::uuid[])));

-- name: WakeParents :exec
-- Sets a timer of kind 'child', due now, on the task of each of these
-- runs' parents, for the attempt that started the run: the unit that fires
-- it locks the parent run alone. A parent pruned already gets none.
INSERT INTO dagen_timers (run_id, task, attempt, claim, wake_at, kind)
SELECT c.parent_run, c.parent_task, c.parent_attempt, c.parent_claim, @now::timestamptz, 'child'
FROM dagen_runs c
WHERE c.id = ANY(ARRAY(SELECT unnest(@ids::uuid[])))
  AND c.parent_run IS NOT NULL
  AND EXISTS (SELECT 1 FROM dagen_runs p WHERE p.id = c.parent_run)
ON CONFLICT (run_id, task) DO UPDATE
SET attempt = excluded.attempt, claim = excluded.claim, wake_at = excluded.wake_at, kind = excluded.kind;

-- name: CancelChildren :exec
-- Sets a timer of kind 'cancel', due now, on each child still under way
-- of these runs, which failed, timed out or were cancelled.
INSERT INTO dagen_timers (run_id, task, attempt, claim, wake_at, kind)
SELECT c.id, '@cancel', 0, 0, @now::timestamptz, 'cancel'
FROM dagen_runs c
WHERE c.parent_run = ANY(@ids::uuid[]) AND c.status IN ('QUEUED', 'RUNNING')
ON CONFLICT (run_id, task) DO NOTHING;

-- name: ChildOutcomes :many
-- How the children of these parent task attempts ended: their status and
-- failure, and their result tasks' status and output.
SELECT c.id, c.workflow, c.status, c.failure_step, c.failure_attempt, c.failure_message,
       c.parent_run, c.parent_task, c.parent_attempt, coalesce(c.result_task, '')::text AS result_task,
       rt.status AS result_status, rt.output AS result_output
FROM (
    SELECT unnest(@parent_runs::uuid[]) AS parent_run,
           unnest(@parent_tasks::text[]) AS parent_task,
           unnest(@parent_attempts::integer[]) AS parent_attempt
) AS k
JOIN dagen_runs c ON c.parent_run = k.parent_run AND c.parent_task = k.parent_task AND c.parent_attempt = k.parent_attempt
LEFT JOIN dagen_tasks rt ON rt.run_id = c.id AND rt.name = c.result_task;

-- name: ListChildren :many
-- The runs tasks of a run started, oldest first.
SELECT id, workflow, status, parent_task, parent_attempt, created_at, finished_at
FROM dagen_runs
WHERE parent_run = @parent_run
ORDER BY id;
