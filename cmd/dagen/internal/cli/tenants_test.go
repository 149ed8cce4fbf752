package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dagenhq/dagen/cmd/dagen/internal/cli"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestTenants runs dagen tenants ls and weight on a migrated schema: the
// weights set are listed (text and -json), a weight of 1 drops out of the
// list, and bad arguments say what is wanted.
func TestTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := pgtest.Schema(t)
	pool := pgtest.Pool(t, schema, 2)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	tenants := func(want int, args ...string) (string, string) {
		t.Helper()
		args = append(append([]string{"tenants"}, args...), "-db", pgtest.URL(), "-schema", schema)
		code, out, errOut := dagen(t, args...)
		if code != want {
			t.Fatalf("dagen %s: exit %d, want %d\nstdout:\n%sstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out, errOut
	}

	out, _ := tenants(cli.ExitOK)
	if out != "no tenant weights: every tenant has weight 1\n" {
		t.Errorf("tenants on a new schema:\n%s", out)
	}
	out, _ = tenants(cli.ExitOK, "ls", "-json")
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("tenants ls -json on a new schema:\n%s", out)
	}

	out, _ = tenants(cli.ExitOK, "weight", "zeta", "2")
	if out != "tenant zeta: weight 2\n" {
		t.Errorf("tenants weight zeta 2:\n%s", out)
	}
	out, _ = tenants(cli.ExitOK, "weight", "acme", "100", "-json")
	var set struct {
		Tenant string
		Weight int
	}
	if err := json.Unmarshal([]byte(out), &set); err != nil || set.Tenant != "acme" || set.Weight != 100 {
		t.Errorf("tenants weight -json: %v\n%s", err, out)
	}
	out, _ = tenants(cli.ExitOK, "ls")
	wantLines(t, out,
		`TENANT +WEIGHT`,
		`acme +100`,
		`zeta +2`,
		``,
		`every other tenant has weight 1`,
	)
	// dagen runs tenants is the same command.
	out, _ = runsCmd(t, cli.ExitOK, schema, "tenants", "-json")
	var list []struct {
		Tenant string
		Weight int
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 2 || list[0].Tenant != "acme" || list[1].Weight != 2 {
		t.Errorf("runs tenants -json: %v\n%s", err, out)
	}

	out, _ = tenants(cli.ExitOK, "weight", "zeta", "1")
	if out != "tenant zeta: weight 1 (the default)\n" {
		t.Errorf("tenants weight zeta 1:\n%s", out)
	}
	out, _ = tenants(cli.ExitOK)
	if strings.Contains(out, "zeta") || !strings.Contains(out, "acme") {
		t.Errorf("a tenant back at weight 1 is not listed:\n%s", out)
	}

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"weight", "acme", "0"}, []string{"tenant weight 0", "1 to 100"}},
		{[]string{"weight", "acme", "101"}, []string{"tenant weight 101", "1 to 100"}},
		{[]string{"weight", "acme", "three"}, []string{`weight "three" is not a whole number`, "1 to 100"}},
		{[]string{"weight", "acme"}, []string{"want a tenant and a weight from 1 to 100", "dagen tenants weight acme 3"}},
		{[]string{"weight", " acme", "3"}, []string{"white space"}},
		{[]string{"wieght", "acme", "3"}, []string{`unknown command "wieght": did you mean weight?`}},
		{[]string{"ls", "acme"}, []string{`unexpected argument "acme"`}},
	} {
		_, errOut := tenants(cli.ExitError, c.args...)
		if !strings.HasPrefix(errOut, "dagen tenants") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("tenants %s: want one line from dagen tenants:\n%s", strings.Join(c.args, " "), errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("tenants %s: want %q in:\n%s", strings.Join(c.args, " "), w, errOut)
			}
		}
	}
	code, help, _ := dagen(t, "--help")
	if code != cli.ExitOK || !strings.Contains(help, "dagen tenants [ls|weight TENANT N]") ||
		!strings.Contains(help, "from 1 to 100") || store.MaxWeight != 100 {
		t.Errorf("the usage documents dagen tenants and its range (store.MaxWeight %d)", store.MaxWeight)
	}
}
