-- name: HoldSignal :exec
-- Holds a signal for a wait that has not begun. The caller holds the run's
-- lock.
UPDATE dagen_tasks SET signal = @payload::bytea
WHERE run_id = @run_id AND name = @name;

-- name: ConsumeSignals :exec
-- Makes held signals the outputs of the waits they resolve, after
-- UpdateTasks wrote those COMPLETED.
UPDATE dagen_tasks t SET output = t.signal, signal = NULL
FROM (SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@names::text[]) AS name) AS k
WHERE t.run_id = k.run_id AND t.name = k.name;

-- name: DeleteTaskTimer :exec
DELETE FROM dagen_timers WHERE run_id = @run_id AND task = @task;
