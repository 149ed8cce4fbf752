-- name: TryLeaderLock :one
-- Takes the schema's leader lock for this session, if free. The lock lasts
-- as long as the session: a live connection that took it still holds it.
SELECT pg_try_advisory_lock(hashtext('dagen.leader.' || current_schema()))::boolean AS acquired;

-- name: ReleaseLeaderLock :exec
SELECT pg_advisory_unlock(hashtext('dagen.leader.' || current_schema()));

-- name: NameLeader :exec
-- Records that worker took the leader lock.
INSERT INTO dagen_leader (singleton, worker, since)
VALUES (true, @worker::text, coalesce(sqlc.narg('now')::timestamptz, now()))
ON CONFLICT (singleton) DO UPDATE SET worker = excluded.worker, since = excluded.since;
