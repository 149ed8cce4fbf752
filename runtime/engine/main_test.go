package engine_test

import (
	"os"
	"testing"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// schemas lends the tests migrated schemas, and databases the tests
// through PgBouncer, emptied back between tests rather than made and
// dropped for each (see pgtest.Lender).
var schemas, databases *pgtest.Lender

func TestMain(m *testing.M) {
	schemas = pgtest.NewPackageSchemas(pgstore.Migrate)
	databases = pgtest.NewPackageDatabases(pgstore.Migrate)
	os.Exit(pgtest.RunLending(m, schemas, databases))
}
