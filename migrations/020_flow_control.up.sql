-- dagen schema, version 20: tenant weights, run priorities and rate limits
-- (docs/concepts.md, "The order of admission").

-- Tenant weights. A tenant of weight w has w places in each block of the
-- fair queue: its tasks fill block_fill of the w places of block
-- block_ptr before the next block. Weight 1 (every tenant so far) keeps
-- block_fill at 0, as before.
ALTER TABLE dagen_tenant_groups
    ADD COLUMN weight integer NOT NULL DEFAULT 1 CHECK (weight BETWEEN 1 AND 100),
    ADD COLUMN block_fill integer NOT NULL DEFAULT 0;

-- Several places of one block belong to one tenant now, so a queue id is
-- no longer unique: it is the place, and the tenant's rows in one block
-- share it. The index keeps the claim's walk in id order.
ALTER TABLE dagen_ready DROP CONSTRAINT dagen_ready_pkey;
CREATE INDEX dagen_ready_id_idx ON dagen_ready (id);

-- Run priorities, 0 (the default) to 9. A task keeps its run's priority,
-- so that an enqueue reads it with the task's rate limit in one lookup.
ALTER TABLE dagen_runs ADD COLUMN priority smallint NOT NULL DEFAULT 0;
ALTER TABLE dagen_tasks
    ADD COLUMN priority smallint NOT NULL DEFAULT 0,
    -- The rate limit an attempt of the task takes tokens from: the limit,
    -- the bucket's key and the units. NULL for almost every task.
    ADD COLUMN rate_limit text,
    ADD COLUMN rate_key text,
    ADD COLUMN rate_units integer;

-- A queue entry of a run with a priority: a claim that takes one of a
-- tenant's places hands it to the tenant's entry of highest priority. Only
-- entries above the default are indexed (by tenant group, the id's low
-- bits), so a queue without priorities pays nothing for it.
ALTER TABLE dagen_ready
    ADD COLUMN priority smallint NOT NULL DEFAULT 0,
    ADD COLUMN rate_limit text,
    ADD COLUMN rate_key text,
    ADD COLUMN rate_units integer;
CREATE INDEX dagen_ready_priority_idx ON dagen_ready ((id % 1048576), priority DESC, id) WHERE priority > 0;
-- The entries holding a bucket's tokens (see dagen_rate_buckets).
CREATE INDEX dagen_ready_rate_idx ON dagen_ready (rate_limit, rate_key) WHERE rate_limit IS NOT NULL;

-- What an enqueue needs to know before it looks further: whether any rate
-- limit or any run priority was ever set in this schema. Set once, never
-- cleared: until then an enqueue reads nothing of its tasks.
CREATE TABLE dagen_flow_flags (
    singleton      boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    rate_limits    boolean NOT NULL DEFAULT false,
    priorities     boolean NOT NULL DEFAULT false
);
INSERT INTO dagen_flow_flags (singleton) VALUES (true);

-- Rate limits, by name: a bucket of each limit per key holds up to burst
-- tokens and gains rate a second.
CREATE TABLE dagen_rate_limits (
    name  text PRIMARY KEY,
    rate  float8 NOT NULL CHECK (rate > 0),
    burst integer NOT NULL CHECK (burst > 0)
);

-- The buckets. tokens is the count at updated_at; a claim of an entry
-- takes its units (dagen_rate_spends), and an admission lets into the
-- ready queue only as many units as the bucket has, less those its entries
-- there hold already, so that no claim finds the bucket short.
CREATE TABLE dagen_rate_buckets (
    rate_limit text NOT NULL,
    rate_key   text NOT NULL,
    tokens     float8 NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (rate_limit, rate_key)
);

-- The tokens claims took, not yet counted in their buckets: a claim
-- appends a row (it locks nothing, so claims of one bucket do not wait for
-- each other), and the next admission for the bucket takes the rows and
-- counts them in, in the order they were taken, as if each claim had
-- updated the bucket itself.
CREATE TABLE dagen_rate_spends (
    rate_limit text NOT NULL,
    rate_key   text NOT NULL,
    spent_at   timestamptz NOT NULL,
    units      integer NOT NULL
);
CREATE INDEX dagen_rate_spends_bucket_idx ON dagen_rate_spends (rate_limit, rate_key);

-- Tasks waiting for tokens, outside the fair queue: they hold no place in
-- it and no worker. Admitted in (priority, seq) order.
CREATE SEQUENCE dagen_rate_waiting_seq;
CREATE TABLE dagen_rate_waiting (
    rate_limit  text NOT NULL,
    rate_key    text NOT NULL,
    priority    smallint NOT NULL,
    seq         bigint NOT NULL DEFAULT nextval('dagen_rate_waiting_seq'),
    rate_units  integer NOT NULL,
    run_id      uuid NOT NULL,
    task        text NOT NULL,
    signature   text NOT NULL,
    tenant      text NOT NULL,
    enqueued_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (run_id, task)
);
-- In admission order, so that an admission reads a bucket's first waiting
-- tasks from the index, however many wait.
CREATE INDEX dagen_rate_waiting_order_idx ON dagen_rate_waiting (rate_limit, rate_key, priority DESC, seq);

-- When to look at a bucket's waiting tasks: an enqueue that parks a task
-- makes its bucket due now unless it is due already; an admission that
-- leaves tasks waiting makes it due when the next token comes, and drops
-- the row when none waits. Read with the timers (NextTimer, FireTimers).
-- touched counts the enqueues that parked a task since the row was made:
-- an admission drops the row only if no enqueue touched it since it took
-- it (one that did parked a task the admission did not see).
CREATE TABLE dagen_rate_wakes (
    rate_limit text NOT NULL,
    rate_key   text NOT NULL,
    wake_at    timestamptz NOT NULL,
    touched    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (rate_limit, rate_key)
);
CREATE INDEX dagen_rate_wakes_wake_idx ON dagen_rate_wakes (wake_at);

ALTER TABLE dagen_rate_waiting SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE dagen_rate_wakes SET (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000);
ALTER TABLE dagen_rate_buckets SET (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000);
ALTER TABLE dagen_rate_spends SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
