package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dagenhq/dagen/internal/analysis"
	"github.com/dagenhq/dagen/runtime/store"
)

// tenantsCommands are the subcommands of dagen tenants.
var tenantsCommands = []string{"ls", "weight"}

// tenantJSON is a tenant's weight in -json output.
type tenantJSON struct {
	Tenant string `json:"tenant"`
	Weight int    `json:"weight"`
}

// tenants runs dagen tenants (or dagen runs tenants): ls (the default)
// lists the tenants whose weight is not 1; weight TENANT N sets one.
func (r *runsIO) tenants(args []string) int {
	sub := "ls"
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	if !slices.Contains(tenantsCommands, sub) {
		if s := analysis.Suggest(sub, tenantsCommands); s != "" {
			fmt.Fprintf(r.stderr, "dagen tenants: unknown command %q: did you mean %s?\n", sub, s)
		} else {
			fmt.Fprintf(r.stderr, "dagen tenants: unknown command %q: want %s\n", sub, strings.Join(tenantsCommands, ", "))
		}
		return ExitError
	}
	if sub == "ls" {
		if len(args) > 0 {
			fmt.Fprintf(r.stderr, "dagen tenants ls: unexpected argument %q: it lists every tenant whose weight is not 1\n", args[0])
			return ExitError
		}
		return r.listTenants()
	}
	if len(args) != 2 {
		fmt.Fprintf(r.stderr, "dagen tenants weight: want a tenant and a weight from 1 to %d, such as: dagen tenants weight acme 3\n", store.MaxWeight)
		return ExitError
	}
	tenant := args[0]
	if err := store.ValidTenant(tenant); err != nil {
		fmt.Fprintf(r.stderr, "dagen tenants weight: %v\n", err)
		return ExitError
	}
	weight, err := strconv.Atoi(args[1])
	if err != nil {
		fmt.Fprintf(r.stderr, "dagen tenants weight: weight %q is not a whole number: want 1 to %d (1 is the default)\n", args[1], store.MaxWeight)
		return ExitError
	}
	if err := store.ValidWeight(weight); err != nil {
		fmt.Fprintf(r.stderr, "dagen tenants weight: %v\n", err)
		return ExitError
	}
	if err := r.st.SetTenantWeight(r.ctx, tenant, weight); err != nil {
		fmt.Fprintf(r.stderr, "dagen tenants weight: %v\n", err)
		return ExitFailure
	}
	if r.f.json {
		printJSON(r.stdout, tenantJSON{Tenant: tenant, Weight: weight})
		return ExitOK
	}
	dflt := ""
	if weight == 1 {
		dflt = " (the default)"
	}
	fmt.Fprintf(r.stdout, "tenant %s: weight %d%s\n", tenant, weight, dflt)
	return ExitOK
}

// listTenants prints the tenants whose weight is not 1.
func (r *runsIO) listTenants() int {
	all, err := r.st.TenantWeights(r.ctx)
	if err != nil {
		fmt.Fprintf(r.stderr, "dagen tenants ls: %v\n", err)
		return ExitFailure
	}
	if r.f.json {
		out := make([]tenantJSON, len(all))
		for i, tw := range all {
			out[i] = tenantJSON{Tenant: tw.Tenant, Weight: tw.Weight}
		}
		printJSON(r.stdout, out)
		return ExitOK
	}
	if len(all) == 0 {
		fmt.Fprintln(r.stdout, "no tenant weights: every tenant has weight 1")
		return ExitOK
	}
	w := tabwriter.NewWriter(r.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TENANT\tWEIGHT")
	for _, tw := range all {
		fmt.Fprintf(w, "%s\t%d\n", tw.Tenant, tw.Weight)
	}
	_ = w.Flush()
	fmt.Fprintln(r.stdout, "\nevery other tenant has weight 1")
	return ExitOK
}
