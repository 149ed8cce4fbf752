-- name: MigrationLock :exec
-- Serializes migrations of one schema across processes, until the
-- transaction ends.
SELECT pg_advisory_xact_lock(hashtext('dagen.migrate.' || current_schema()));

-- name: MigrationVersion :one
SELECT coalesce(max(version), 0)::integer AS version FROM dagen_migrations;

-- name: MigrationRecord :exec
INSERT INTO dagen_migrations (version, name) VALUES (@version, @name);

-- name: MigrationSchema :one
-- The schema Migrate creates objects in ('' when no schema of the
-- search_path exists) and whether the version table is visible.
SELECT coalesce(current_schema()::text, '')::text AS schema,
       (to_regclass('dagen_migrations') IS NOT NULL)::boolean AS migrated;

-- name: MigrationList :many
SELECT version, name, applied_at FROM dagen_migrations ORDER BY version;
