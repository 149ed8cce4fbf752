-- dagen schema, version 5: idempotency keys. A run may carry a key; while
-- it is retained, no other run of the same workflow and tenant has it, so
-- a second trigger with the key finds the first run instead of starting
-- one. The unique index arbitrates between triggers of many processes at
-- once; pruning a run frees its key.
--
-- The key never changes after the insert, and the index is partial: runs
-- without a key cost it nothing, and a run's updates stay HOT.

ALTER TABLE dagen_runs ADD COLUMN key text;

CREATE UNIQUE INDEX dagen_runs_key_idx ON dagen_runs (workflow, tenant, key) WHERE key IS NOT NULL;
