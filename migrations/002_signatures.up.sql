-- dagen schema, version 2: task signatures, so a deploy never hands a step
-- another step's data nor fails a run that other code could finish.
--
-- A task's signature says what code may run it (its workflow, name, kind,
-- input, output and parents with their types: see engine.Signature). The
-- ready queue carries it so a claim takes only what the worker serves.

ALTER TABLE dagen_tasks ADD COLUMN signature text NOT NULL DEFAULT '';

-- Unfinished tasks of runs created before this version get a legacy
-- signature: their workflow and the shape fingerprint their run recorded.
-- A worker serves it when its definition has that shape (names and edges),
-- which is all the check those runs had.
UPDATE dagen_tasks t
SET signature = 'legacy:' || r.workflow || ':' || r.fingerprint
FROM dagen_runs r
WHERE r.id = t.run_id
  AND t.status IN ('PENDING', 'QUEUED', 'RUNNING', 'SLEEPING', 'BACKOFF');

-- The ready queue filters claims by signature instead of by workflow.
ALTER TABLE dagen_ready ADD COLUMN signature text NOT NULL DEFAULT '';
UPDATE dagen_ready q SET signature = t.signature
FROM dagen_tasks t
WHERE t.run_id = q.run_id AND t.name = q.task;
ALTER TABLE dagen_ready ALTER COLUMN signature DROP DEFAULT;
ALTER TABLE dagen_ready DROP COLUMN workflow;

-- The signatures a worker serves, published with its record.
ALTER TABLE dagen_workers ADD COLUMN signatures text[] NOT NULL DEFAULT '{}';

-- What each signature means, recorded by the workers that serve it, so that
-- `dagen check -db` can say why new code cannot run a stored task.
CREATE TABLE dagen_signatures (
    signature   text PRIMARY KEY,
    workflow    text NOT NULL,
    step        text NOT NULL,
    kind        text NOT NULL,
    input_type  text NOT NULL,
    output_type text NOT NULL,
    parents     jsonb NOT NULL,
    recorded_at timestamptz NOT NULL
);

-- The queue entries for which the leader has logged that no live worker
-- serves their signature (a WAITING event), by queue id. Queue ids are never
-- reused (block pointers only move up), so an entry is reported once per
-- queued round. A table of its own, not a column of dagen_ready: marking a
-- queue row would lock it, and a claim (SKIP LOCKED) would pass it by.
CREATE TABLE dagen_waiting_reported (
    id bigint PRIMARY KEY
);
