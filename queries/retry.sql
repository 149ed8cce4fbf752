-- name: RetryLoadTasks :many
-- Every task of a run being retried, in task order, with the events its
-- row keeps: the caller holds the run's lock.
SELECT name, kind, children, status, attempt, signature,
       queued_event, queued_at, started_event, started_at, completed_event, finished_at
FROM dagen_tasks
WHERE run_id = @run_id
ORDER BY seq;

-- name: RetryResetTasks :exec
-- Resets tasks of a run being retried: PENDING or QUEUED with their
-- pending parents counted again, output, error, reason, wake time, finish
-- time and the events their rows kept (written out by the caller)
-- cleared. The attempt stays, so that results of older attempts are
-- stale; max_attempts grows by it, so that the budget starts over.
UPDATE dagen_tasks t
SET status = u.status,
    pending_parents = u.pending_parents,
    max_attempts = t.max_attempts + t.attempt,
    output = NULL,
    error = '',
    reason = '',
    wake_at = NULL,
    finished_at = NULL,
    queued_event = NULL,
    queued_at = NULL,
    started_event = NULL,
    started_at = NULL,
    completed_event = NULL
FROM (
    SELECT unnest(@names::text[]) AS name,
           unnest(@statuses::text[]) AS status,
           unnest(@pending_parents::integer[]) AS pending_parents
) AS u
WHERE t.run_id = @run_id AND t.name = u.name;

-- name: RetryRunning :exec
-- Puts a retried run back to RUNNING, or QUEUED for its cap, with its
-- pending tasks counted again, its failure and finish time cleared and
-- its deadline, if it has a timeout, counted from now.
UPDATE dagen_runs
SET status = @status::text,
    deadline_at = coalesce(sqlc.narg('now')::timestamptz, now()) + timeout_ms * interval '1 millisecond',
    pending = @pending,
    failure_step = NULL,
    failure_attempt = NULL,
    failure_message = NULL,
    finished_at = NULL
WHERE id = @id;
