package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// appName is the application_name of the benchmark's connections.
const appName = "dagen bench"

// openPool opens a pool of the benchmark on the database at url, with
// search_path set to the schema (unless a pooler sets it), and checks
// that the server answers. It opens it as a store does
// (pgstore.OpenPool): behind a pooler, without named prepared statements.
func openPool(ctx context.Context, o options, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	if !o.pooler {
		cfg.ConnConfig.RuntimeParams["search_path"] = o.schema
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = appName
	cfg.MaxConns = int32(o.maxConns)
	if o.planCacheMode != "" {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = o.planCacheMode
	}
	pool, err := pgstore.OpenPool(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w (set DATABASE_URL to a reachable server)", err)
	}
	return pool, nil
}

// resetSchema drops the schema with everything in it and creates it empty.
// The name was checked to be a plain identifier.
func resetSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return fmt.Errorf("create schema %s: %w", schema, err)
	}
	return nil
}

// truncate empties the run tables between workloads, so each starts on
// empty tables as River's benchmark does, and counts only its own runs.
// It also forgets the flow control a workload set (rate limits, tenant
// weights, the schema's flags): the workloads without it claim as a
// schema that never had it does.
func (b *bench) truncate(ctx context.Context) error {
	const sql = "TRUNCATE dagen_runs, dagen_tasks, dagen_events, dagen_ready, dagen_timers, dagen_workers, " +
		"dagen_rate_limits, dagen_rate_buckets, dagen_rate_waiting, dagen_rate_wakes"
	const flow = "UPDATE dagen_flow_flags SET rate_limits = false, priorities = false; UPDATE dagen_tenant_groups SET weight = 1, block_fill = 0 WHERE weight <> 1"
	for _, pool := range b.pools {
		if _, err := pool.Exec(ctx, sql); err != nil {
			return fmt.Errorf("empty the run tables: %w", err)
		}
		if _, err := pool.Exec(ctx, flow); err != nil {
			return fmt.Errorf("forget the flow control: %w", err)
		}
	}
	return nil
}

// count adds up the count query sql returns on every shard's database
// (the one database when unsharded).
func (b *bench) count(ctx context.Context, sql string, args ...any) (int, error) {
	total := 0
	for _, pool := range b.pools {
		var n int
		if err := pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// queryAll runs sql on every shard's database (the one database when
// unsharded) and calls scan for each row.
func (b *bench) queryAll(ctx context.Context, sql string, args []any, scan func(pgx.Rows) error) error {
	for _, pool := range b.pools {
		rows, err := pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if err := scan(rows); err != nil {
				rows.Close()
				return err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}
