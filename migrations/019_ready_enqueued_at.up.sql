-- dagen schema, version 19: a queue entry records when it was queued.
--
-- The leader's backlog reading (dagen.backlog.oldest_queued_age) takes the
-- oldest entry's age per workflow from the ready queue alone, with the
-- counts it reads there already: the tasks' own queued_at would cost a
-- lookup per queued row. A default that is not volatile: adding the
-- column rewrites nothing (the rows there now get the migration's time).
ALTER TABLE dagen_ready
    ADD COLUMN enqueued_at timestamptz NOT NULL DEFAULT now();
