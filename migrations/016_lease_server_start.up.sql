-- dagen schema, version 16: a lease records the incarnation of the server
-- that took it.
--
-- A worker deletes a claim's lease once it has seen every attempt of the
-- claim answered. After a failover to a standby that lacked some of those
-- answers, the new primary has the claim but not every answer: a task is
-- still RUNNING there, and its lease is how its worker's heartbeat finds
-- and releases it. Deleted, it would stay RUNNING for good.
--
-- A server's incarnation is its postmaster's start time: a promoted
-- standby, or a primary restarted after a crash, has another. The worker
-- deletes only leases taken on the incarnation that runs its deletion
-- (queries/tasks.sql, DeleteLeases); a lease from an earlier one is left
-- to the leader, which deletes it once it expired and no task holds it.
-- The default fills it at every claim, so the claim's statement is
-- unchanged.
ALTER TABLE dagen_leases
    ADD COLUMN server_start timestamptz NOT NULL DEFAULT pg_postmaster_start_time();
