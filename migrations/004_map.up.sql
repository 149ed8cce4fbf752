-- dagen schema, version 4: mapped steps (each=), which run once per element
-- of a parent's output.
--
-- A mapped step's task (kind 'map') is claimed once its parents are
-- resolved, like a step; when the engine maps it, the task is MAPPING and
-- one task of kind 'element' per element is inserted in the same
-- transaction, named "Step[i]". While MAPPING, pending_parents counts the
-- elements not resolved yet (its parents were all resolved before), and
-- next_element is the first element not queued yet: map_limit of them at
-- most are in flight (0: no bound). When the last element resolves, the
-- mapped task completes with the array of the elements' outputs.
--
-- An element keeps its element (item), its index (element) and the name of
-- the parent it stands for (each): its claim hands item as that parent's
-- output. It has its mapped task's seq, so a run's tasks list each mapped
-- task's elements right after it, in element order.
--
-- New columns have constant defaults (no table rewrite) and none is
-- indexed, so task updates stay HOT.

ALTER TABLE dagen_tasks
    ADD COLUMN each         text NOT NULL DEFAULT '',
    ADD COLUMN element      integer,
    ADD COLUMN item         bytea,
    ADD COLUMN elements     integer NOT NULL DEFAULT 0,
    ADD COLUMN next_element integer NOT NULL DEFAULT 0,
    ADD COLUMN map_limit    integer NOT NULL DEFAULT 0;

-- The kind and status checks of version 1, with the new kind and status.
-- NOT VALID then VALIDATE: the scan of existing rows does not block writers.
ALTER TABLE dagen_tasks DROP CONSTRAINT dagen_tasks_kind_check;
ALTER TABLE dagen_tasks ADD CONSTRAINT dagen_tasks_kind_check
    CHECK (kind IN ('step', 'sleep', 'onfailure', 'map', 'element')) NOT VALID;
ALTER TABLE dagen_tasks VALIDATE CONSTRAINT dagen_tasks_kind_check;

ALTER TABLE dagen_tasks DROP CONSTRAINT dagen_tasks_status_check;
ALTER TABLE dagen_tasks ADD CONSTRAINT dagen_tasks_status_check
    CHECK (status IN ('PENDING', 'QUEUED', 'RUNNING', 'SLEEPING', 'BACKOFF', 'MAPPING',
                      'COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED')) NOT VALID;
ALTER TABLE dagen_tasks VALIDATE CONSTRAINT dagen_tasks_status_check;
