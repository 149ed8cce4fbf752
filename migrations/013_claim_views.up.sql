-- dagen schema, version 13: a completion may trust what the claim returned.
--
-- A completion read each task it completes (GetTasks) before deciding what
-- to write: a primary-key lookup a result, a noticeable part of the
-- database's work in a step (see docs/performance.md, "Completions trust
-- the claim's view"), for rows the claiming process had just written. A
-- claim now also returns what a completion needs of the row (its children,
-- its STARTED event, where the row is), and the store that claimed keeps
-- it until the attempt is answered. A completed result of such an attempt
-- is decided on what was kept, and UpdateTasks writes it only where the
-- row is still RUNNING at that STARTED event (the attempt the claim
-- started): a row that moved on since (rescued, cancelled, retried) makes
-- UpdateTasks call dagen_claim_moved, which fails the transaction, and the
-- store decides again on the rows it reads. Nothing is written on a kept
-- view that the database would not have confirmed.
--
-- The error's SQLSTATE, DGN01, is how the store knows it from any other.
CREATE FUNCTION dagen_claim_moved(run_id uuid, task text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'dagen: task %/% moved on since it was claimed', run_id, task
        USING ERRCODE = 'DGN01';
END
$$;
