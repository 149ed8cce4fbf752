-- name: TakeLead :one
-- Takes the schema's leadership for holder, or renews it, until now + ttl:
-- a row comes back only when holder leads, with the lease's term. A lease
-- that is free (given up, or expired) goes to the first taker, with the
-- next term; a holder that renews keeps its term. An UPDATE, not an
-- INSERT ... ON CONFLICT, for the row that exists: a worker that does not
-- lead then neither locks the row (a write, every heartbeat of every
-- worker) nor waits for the leader's duties that hold it FOR SHARE; only a
-- taker of a lease that expired waits for them.
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now()) AS now
), renewed AS (
    UPDATE dagen_leader AS l
    SET holder = @holder::text,
        expires_at = (SELECT now FROM clock) + @ttl::interval,
        term = l.term + (l.holder IS DISTINCT FROM @holder::text)::int
    WHERE l.singleton
      AND (l.holder = @holder::text OR l.holder IS NULL OR l.expires_at <= (SELECT now FROM clock))
    RETURNING l.term
), created AS (
    INSERT INTO dagen_leader (singleton, worker, since, holder, term, expires_at)
    SELECT true, '', now, @holder::text, 1, now + @ttl::interval FROM clock
    WHERE NOT EXISTS (SELECT 1 FROM dagen_leader)
    ON CONFLICT (singleton) DO NOTHING
    RETURNING term
)
SELECT term FROM renewed
UNION ALL
SELECT term FROM created;

-- name: GiveUpLead :exec
-- Frees the lease if holder has it, so the next taker need not wait for it
-- to expire.
UPDATE dagen_leader SET holder = NULL, expires_at = NULL WHERE holder = @holder::text;

-- name: HoldsLead :one
-- Whether holder still leads in term: the fence of a leader's duty, in
-- the duty's transaction. FOR SHARE makes a taker of the lease wait for
-- the duty's commit, so no duty of an old term commits in a new one.
SELECT EXISTS (
    SELECT 1 FROM dagen_leader
    WHERE holder = @holder::text AND term = @term::bigint
      AND expires_at > coalesce(sqlc.narg('now')::timestamptz, now())
    FOR SHARE
)::boolean AS holds;

-- name: NameLeader :exec
-- Records which worker took the lead, for the workers' view.
INSERT INTO dagen_leader (singleton, worker, since)
VALUES (true, @worker::text, coalesce(sqlc.narg('now')::timestamptz, now()))
ON CONFLICT (singleton) DO UPDATE SET worker = excluded.worker, since = excluded.since;
