-- dagen schema, version 18: child runs (//dag:child).
--
-- A task of kind 'child' builds the input of a run of another workflow;
-- the transaction that stores its attempt's result creates that run, and
-- the task is AWAITING until the run ends. The child run records the
-- attempt that started it: parent_run, parent_task (a step, or an element
-- "Step[3]"), parent_attempt and parent_claim, and result_task, the task
-- of its own whose output becomes the parent task's (NULL: none).
--
-- No transaction locks a child run and then its parent, or the reverse:
-- a child run that ends sets a timer of kind 'child' on its parent's task,
-- due at once, and the transaction that fires it locks the parent alone
-- and reads the child's outcome; a run that fails, times out or is
-- cancelled sets a timer of kind 'cancel' (task '@cancel') on each child
-- still under way. The index finds a run's children (the cancellations,
-- the operator views) and the child of a parent's task attempt (the
-- timer). Nullable columns without defaults: adding them rewrites nothing.
ALTER TABLE dagen_runs
    ADD COLUMN parent_run uuid,
    ADD COLUMN parent_task text,
    ADD COLUMN parent_attempt integer,
    ADD COLUMN parent_claim bigint,
    ADD COLUMN result_task text;

CREATE INDEX dagen_runs_parent_idx ON dagen_runs (parent_run, parent_task) WHERE parent_run IS NOT NULL;

ALTER TABLE dagen_tasks DROP CONSTRAINT dagen_tasks_kind_check;
ALTER TABLE dagen_tasks ADD CONSTRAINT dagen_tasks_kind_check
    CHECK (kind IN ('step', 'sleep', 'onfailure', 'map', 'element', 'signal', 'child'));

ALTER TABLE dagen_timers DROP CONSTRAINT dagen_timers_kind_check;
ALTER TABLE dagen_timers ADD CONSTRAINT dagen_timers_kind_check
    CHECK (kind IN ('sleep', 'retry', 'deadline', 'signal', 'child', 'cancel')) NOT VALID;
ALTER TABLE dagen_timers VALIDATE CONSTRAINT dagen_timers_kind_check;

-- What a child step's signature covers besides a step's (store.SignatureInfo's
-- Child: its workflow, input type and result step), so that dagen check -db
-- can say how a child step changed. A constant default: no rewrite.
ALTER TABLE dagen_signatures ADD COLUMN child text NOT NULL DEFAULT '';
