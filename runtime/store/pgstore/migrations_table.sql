-- The version table Migrate keeps. Not a migration itself: Migrate creates
-- it (if missing) before it can tell which migrations are applied.
CREATE TABLE IF NOT EXISTS dagen_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
