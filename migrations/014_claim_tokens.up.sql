-- dagen schema, version 14: a claim is fenced by a token that a rolled-back
-- history cannot hand out again.
--
-- A task's writes were fenced by its attempt number, and a claim view's by
-- the STARTED event id of the attempt. Both come from what the database
-- stored: a standby promoted a few seconds behind the primary it replaces
-- has an older history, in which tasks that workers claimed, ran and even
-- completed are QUEUED again at the attempt before, and the event sequence
-- is back where it was. The next claim of such a task starts the same
-- attempt number, perhaps with the same STARTED event id, as the claim a
-- worker still holds from the lost history; that worker's late result, made
-- from parents' outputs the new primary may no longer have, would pass the
-- fence for the new claim's.
--
-- Every claim now writes a random token with the task's attempt (claim),
-- returns it to the worker, and every write of that attempt names it: a
-- result, and a heartbeat for the attempts its worker holds. A random
-- token does not repeat whatever the database forgot. 0 is no claim: the
-- task was never claimed in this history.
ALTER TABLE dagen_tasks ADD COLUMN claim bigint NOT NULL DEFAULT 0;

-- A lease's id is the least STARTED event id of its claim: after a
-- rollback a new claim's lease may take the id of a lease that a process
-- of the lost history still means to delete once its attempts are
-- answered. A lease is now deleted by its id and its token, the least
-- claim token of its tasks, which no other claim's lease has. 0: a lease
-- written before this version.
ALTER TABLE dagen_leases ADD COLUMN token bigint NOT NULL DEFAULT 0;

-- A timer (a sleep's wake, a retry delay's end, a signal wait's end)
-- belongs to the attempt that set it, and so to its claim.
ALTER TABLE dagen_timers ADD COLUMN claim bigint NOT NULL DEFAULT 0;

-- dagen_new_claim draws a claim token: random, never 0. random() is seeded
-- per backend from a strong source, and a promoted standby's backends are
-- new ones; 52 random bits make two claims of one task at one attempt
-- (the only ones the token tells apart) collide once in 2^52. A SQL
-- function this simple is inlined where it is called.
CREATE FUNCTION dagen_new_claim() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT 1 + floor(random() * 4611686018427387904::float8)::bigint
$$;
