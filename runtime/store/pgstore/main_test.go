package pgstore_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// schemas lends the tests migrated schemas, emptied back between tests
// rather than made and dropped for each (see pgtest.Lender).
var schemas *pgtest.Lender

func TestMain(m *testing.M) {
	schemas = pgtest.NewPackageSchemas(pgstore.Migrate)
	code := m.Run()
	if err := schemas.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
