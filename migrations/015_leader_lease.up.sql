-- dagen schema, version 15: leadership is a lease in dagen_leader, not a
-- session's advisory lock.
--
-- A session lock needs a session: behind a transaction-pooling PgBouncer
-- the lock stays with a server connection that other clients then use,
-- and after a failover the promoted standby holds no lock at all while
-- the old leader's process may still believe it leads. A lease row works
-- through any pooler, is replicated with the rest, and carries a term:
-- each new holder raises it, and a leader's duties run only while their
-- transaction finds the holder and term it took (see queries/leader.sql).
--
-- holder is a random token per store (process), worker the name the
-- workers' view shows (NameLeader); a NULL holder is a lease given up.
ALTER TABLE dagen_leader
    ADD COLUMN holder text,
    ADD COLUMN term bigint NOT NULL DEFAULT 0,
    ADD COLUMN expires_at timestamptz;
