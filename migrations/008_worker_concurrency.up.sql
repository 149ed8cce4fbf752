-- How many steps a worker runs at once, as it published it (Serve), for
-- operators; 0 for a worker that did not say.
ALTER TABLE dagen_workers ADD COLUMN concurrency integer NOT NULL DEFAULT 0;
