-- name: InsertEvents :exec
-- Appends events in input order. An id of 0 takes the next one of the
-- log's sequence; another id (an event kept in a task row until now) is
-- kept. A NULL time is the batch's time, at (NULL: the database clock).
INSERT INTO dagen_events (run_id, id, at, task, type, attempt, detail)
SELECT e.run_id, coalesce(nullif(e.id, 0), nextval('dagen_event_seq')),
       coalesce(e.at, sqlc.narg('at')::timestamptz, now()), e.task, e.type, e.attempt, e.detail
FROM (
    SELECT unnest(@run_ids::uuid[]) AS run_id,
           unnest(@ids::bigint[]) AS id,
           unnest(@ats::timestamptz[]) AS at,
           unnest(@tasks::text[]) AS task,
           unnest(@types::text[]) AS type,
           unnest(@attempts::integer[]) AS attempt,
           unnest(@details::text[]) AS detail
) AS e;

-- name: ListEvents :many
-- A run's event log: the rows of dagen_events and the events its tasks
-- keep in their rows (see dagen_tasks), in id order. A QUEUED event kept
-- in a task row was logged before the claim that counted the attempt up.
SELECT ev.at::timestamptz AS at, ev.task::text AS task, ev.type::text AS type,
       ev.attempt::integer AS attempt, ev.detail::text AS detail
FROM (
    SELECT e.id, e.at, e.task, e.type, e.attempt, e.detail
    FROM dagen_events e
    WHERE e.run_id = @run_id
    UNION ALL
    SELECT t.queued_event, t.queued_at, t.name, 'QUEUED',
           t.attempt - CASE WHEN t.started_event > t.queued_event THEN 1 ELSE 0 END, ''
    FROM dagen_tasks t
    WHERE t.run_id = @run_id AND t.queued_event IS NOT NULL
    UNION ALL
    SELECT t.started_event, t.started_at, t.name, 'STARTED', t.attempt, ''
    FROM dagen_tasks t
    WHERE t.run_id = @run_id AND t.started_event IS NOT NULL
    UNION ALL
    SELECT t.completed_event, t.finished_at, t.name, 'COMPLETED', t.attempt, ''
    FROM dagen_tasks t
    WHERE t.run_id = @run_id AND t.completed_event IS NOT NULL
) AS ev
ORDER BY ev.id;
