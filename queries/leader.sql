-- name: TakeLead :one
-- Takes the schema's leadership for holder, or renews it, until now + ttl:
-- a row comes back only when holder leads, with the lease's term. A lease
-- that is free (given up, or expired) goes to the first taker, with the
-- next term; a holder that renews keeps its term.
INSERT INTO dagen_leader AS l (singleton, worker, since, holder, term, expires_at)
VALUES (true, '', coalesce(sqlc.narg('now')::timestamptz, now()), @holder::text, 1,
        coalesce(sqlc.narg('now')::timestamptz, now()) + @ttl::interval)
ON CONFLICT (singleton) DO UPDATE
SET holder = excluded.holder,
    expires_at = excluded.expires_at,
    term = l.term + (l.holder IS DISTINCT FROM excluded.holder)::int
WHERE l.holder = excluded.holder OR l.holder IS NULL OR l.expires_at <= excluded.since
RETURNING l.term;

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
