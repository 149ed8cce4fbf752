-- name: MigrationLock :exec
-- Serializes migrations of one schema across processes, until the
-- transaction ends.
SELECT pg_advisory_xact_lock(hashtext('dagen.migrate.' || current_schema()));

-- name: MigrationVersion :one
SELECT coalesce(max(version), 0)::integer AS version FROM dagen_migrations;

-- name: MigrationRecord :exec
INSERT INTO dagen_migrations (version, name) VALUES (@version, @name);
