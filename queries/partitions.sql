-- name: ListPartitions :many
-- The id ranges the history tables are partitioned by, oldest first.
SELECT suffix, from_id, to_id, dropping FROM dagen_partitions ORDER BY from_id;

-- name: InsertPartition :exec
INSERT INTO dagen_partitions (suffix, from_id, to_id) VALUES (@suffix, @from_id, @to_id);

-- name: DeletePartition :exec
DELETE FROM dagen_partitions WHERE suffix = @suffix;

-- name: LockPartition :one
-- Locks a range's row for its drop, at once or not at all (NOWAIT: a retry
-- of one of its runs holds it, FencePartition, and the next round tries).
SELECT dropping FROM dagen_partitions WHERE suffix = @suffix FOR UPDATE NOWAIT;

-- name: SetPartitionDropping :exec
-- Marks a range whose drop has begun (true), or one attached again (false).
UPDATE dagen_partitions SET dropping = @dropping WHERE suffix = @suffix;

-- name: FencePartition :one
-- Taken first by a transaction that may reopen a finished run (retry): it
-- waits while the run's range is being checked for its drop, and holds the
-- drop off until it commits. No row: no range holds the id. dropping: the
-- range is being dropped.
SELECT dropping FROM dagen_partitions
WHERE from_id <= @id::uuid AND @id::uuid < to_id
FOR SHARE;

-- name: RangeHasRunsSince :one
-- Whether the range [@since_id, @to_id) of run ids holds a run: one look
-- at the runs' key. A run made at the cutoff or later cannot have finished
-- before it, so such a run keeps its range without PartitionRuns's count
-- of all of them.
SELECT EXISTS (SELECT 1 FROM dagen_runs r WHERE r.id >= @since_id::uuid AND r.id < @to_id::uuid)::boolean AS found;

-- name: PartitionRuns :one
-- The runs of a range, and those of them that keep the range: not finished
-- before cutoff, or finished with a task that can still change (a failed
-- run's stragglers).
SELECT count(*) AS runs,
       count(*) FILTER (WHERE r.finished_at IS NULL OR r.finished_at >= @cutoff::timestamptz
                           OR r.status IN ('QUEUED', 'RUNNING')
                           OR (r.status <> 'COMPLETED' AND EXISTS (
                                  SELECT 1 FROM dagen_tasks t
                                  WHERE t.run_id = r.id AND t.status IN ('QUEUED', 'RUNNING', 'BACKOFF')))) AS live
FROM dagen_runs r
WHERE r.id >= @from_id::uuid AND r.id < @to_id::uuid;

-- name: DeleteRangeLeftovers :exec
-- Deletes what the runs of a range have outside the partitioned tables:
-- their idempotency keys (and, though a finished run has none, queue
-- entries, timers and places in a concurrency queue). Leases are left:
-- one may list tasks of other ranges too, and the leader deletes it once
-- none of its tasks holds it.
WITH kys AS (DELETE FROM dagen_run_keys k WHERE k.run_id >= @from_id::uuid AND k.run_id < @to_id::uuid),
     rdy AS (DELETE FROM dagen_ready d WHERE d.run_id >= @from_id::uuid AND d.run_id < @to_id::uuid),
     tms AS (DELETE FROM dagen_timers m WHERE m.run_id >= @from_id::uuid AND m.run_id < @to_id::uuid)
DELETE FROM dagen_run_queue q WHERE q.run_id >= @from_id::uuid AND q.run_id < @to_id::uuid;
