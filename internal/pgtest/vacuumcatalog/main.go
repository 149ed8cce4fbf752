// Command vacuumcatalog vacuums the system catalog of the test database
// (DATABASE_URL, or pgtest.DefaultURL) before make test runs the tests.
//
// The tests make and drop hundreds of schemas and databases, each a few
// dozen tables and indexes: every one leaves dead rows in pg_class,
// pg_attribute and the rest of the catalog. A server that does not
// autovacuum (the CI's does not) keeps them all, and every catalog lookup
// of the next run reads past them. A failure is reported and does not
// stop the tests.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dagenhq/dagen/internal/pgtest"
)

// catalog lists the tables that making and dropping tables grows.
const catalog = `VACUUM pg_catalog.pg_attribute, pg_catalog.pg_class, pg_catalog.pg_constraint,
	pg_catalog.pg_depend, pg_catalog.pg_attrdef, pg_catalog.pg_index, pg_catalog.pg_type,
	pg_catalog.pg_statistic, pg_catalog.pg_inherits, pg_catalog.pg_namespace,
	pg_catalog.pg_proc, pg_catalog.pg_sequence, pg_catalog.pg_partitioned_table,
	pg_catalog.pg_shdepend, pg_catalog.pg_database`

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := vacuum(ctx, pgtest.URL()); err != nil {
		fmt.Fprintf(os.Stderr, "vacuumcatalog: %v (the tests run anyway, slower on a bloated catalog)\n", err)
	}
}

func vacuum(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, catalog); err != nil {
		return fmt.Errorf("vacuum the catalog: %w", err)
	}
	return nil
}
