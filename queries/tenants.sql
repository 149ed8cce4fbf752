-- Queries of tenants as a whole, for operators moving a logical shard to
-- another database (shardstore.MoveLogical).

-- name: KnownTenants :many
-- Every tenant the schema keeps something of apart from finished history:
-- a group of the fair queue (a weight), an idempotency key, a schedule,
-- or an unfinished run.
SELECT tenant FROM dagen_tenant_groups
UNION SELECT tenant FROM dagen_run_keys
UNION SELECT tenant FROM dagen_schedules
UNION SELECT tenant FROM dagen_runs WHERE status IN ('QUEUED', 'RUNNING')
ORDER BY 1;

-- name: CountUnfinishedRuns :one
-- Counts the QUEUED and RUNNING runs of the tenants.
SELECT count(*)::integer AS runs
FROM dagen_runs
WHERE tenant = ANY(@tenants::text[]) AND status IN ('QUEUED', 'RUNNING');

-- name: TenantKeys :many
-- The idempotency keys of the tenants.
SELECT workflow, tenant, key, run_id
FROM dagen_run_keys
WHERE tenant = ANY(@tenants::text[])
ORDER BY workflow, tenant, key;

-- name: PutKeys :execrows
-- Writes idempotency keys that another schema held, keeping any the
-- schema has already.
INSERT INTO dagen_run_keys (workflow, tenant, key, run_id)
SELECT unnest(@workflows::text[]), unnest(@tenants::text[]), unnest(@keys::text[]), unnest(@run_ids::uuid[])
ON CONFLICT DO NOTHING;
