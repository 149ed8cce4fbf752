package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// replicaConnectTimeout bounds the wait for a replica whose URL sets no
// connect_timeout: a replica that is down costs a read that long before
// it goes to the primary.
const replicaConnectTimeout = 3 * time.Second

// replicaURL returns flag, or $DAGEN_REPLICA_URL when flag is empty; ""
// means no replica: every read goes to the primary.
func replicaURL(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv("DAGEN_REPLICA_URL")
}

// replicated returns the store that reads from the replica at url (with
// the primary's schema) and acts on primary. It does not connect: a
// replica that is down is found out by the first read, which then goes to
// the primary and says so. Its sessions are read-only, so a replica URL
// that names a primary by mistake is never written to.
func replicated(primary *pgstore.Store, url, schema string) (*pgstore.Replicated, *pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, nil, fmt.Errorf("parse replica URL: %w", err)
	}
	if schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	}
	cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	if cfg.ConnConfig.ConnectTimeout <= 0 {
		cfg.ConnConfig.ConnectTimeout = replicaConnectTimeout
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("open pool for replica %s: %w", cfg.ConnConfig.Host, err)
	}
	return pgstore.NewReplicated(primary, pool, nil), pool, nil
}

// readSource prints where the reads of a listing came from, when a
// replica is configured: on stdout under a table, on stderr under JSON or
// a graph, so the output stays parseable.
func (r *runsIO) readSource(cmd string, table bool) {
	if r.rep == nil {
		return
	}
	line := r.rep.Source(r.ctx).String()
	switch {
	case line == "":
	case table:
		fmt.Fprintln(r.stdout, line)
	default:
		fmt.Fprintf(r.stderr, "dagen %s: %s\n", cmd, line)
	}
}

// caughtUp waits, bounded, for the replica to replay an action just made
// on the primary, so that the next dagen command that reads the replica
// sees it; it says so when the replica is too far behind.
func (r *runsIO) caughtUp(cmd string) {
	if r.rep == nil {
		return
	}
	err := r.rep.CatchUp(r.ctx)
	switch {
	case err == nil:
	case errors.Is(err, pgstore.ErrReplicaBehind):
		behind := ""
		if d := r.rep.Source(r.ctx).Distance(); d != "" {
			behind = ", " + d
		}
		fmt.Fprintf(r.stderr, "dagen %s: done on the primary, but the replica has not replayed it yet%s: reads from the replica may not show it for a while\n", cmd, behind)
	default:
		fmt.Fprintf(r.stderr, "dagen %s: done on the primary; the replica failed (%v): reads from it may not show it yet\n", cmd, err)
	}
}
