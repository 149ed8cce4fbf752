package storetest

import (
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
)

// testCreateRejectsBadTenants checks that CreateRuns and StartRuns reject a
// run whose tenant store.ValidTenant rejects, with an error wrapping
// ErrInvalidRun and ErrInvalidTenant, creating nothing of the batch; and
// that valid tenants, unicode ones included, are kept as given.
func testCreateRejectsBadTenants(f *fixture) {
	t := f.t
	for name, tenant := range map[string]string{
		"empty":         "",
		"NUL byte":      "acme\x00",
		"invalid UTF-8": "acme\xff",
		"10 KB":         strings.Repeat("0123456789", 1024),
		"control":       "acme\x1b[31m",
		"C1 control":    "acme\u0085",
		"DEL":           "acme\x7f",
		"white space":   "acme ",
	} {
		fine := newRun("wf", "fine", task("a"))
		bad := newRun("wf", tenant, task("a"))
		err := f.st.CreateRuns(f.ctx, []store.NewRun{fine, bad})
		require.ErrorIs(t, err, store.ErrInvalidRun, name)
		require.ErrorIs(t, err, store.ErrInvalidTenant, name)
		_, err = f.st.StartRuns(f.ctx, []store.NewRun{fine, bad}, store.ClaimParams{Worker: "w1", Limit: 2, Lease: time.Minute})
		require.ErrorIs(t, err, store.ErrInvalidRun, name)
		require.ErrorIs(t, err, store.ErrInvalidTenant, name)
		for _, r := range []store.NewRun{fine, bad} {
			_, err = f.st.GetRun(f.ctx, r.ID)
			require.ErrorIs(t, err, store.ErrRunNotFound, "%s: all or nothing", name)
		}
	}
	require.Empty(t, f.claim(10), "nothing was enqueued")

	valid := []string{"t", "Acme Corp", "ünïcødé", "東京", "🦀", strings.Repeat("é", store.MaxTenantLen/2)}
	ids := make(map[string]store.NewRun, len(valid))
	for _, tenant := range valid {
		r := newRun("wf", tenant, task("a"))
		f.create(r)
		ids[tenant] = r
		require.Equal(t, tenant, f.run(r.ID).Tenant)
	}
	claimed := f.claim(10)
	require.Len(t, claimed, len(valid), "one queue group a tenant")
	for _, ct := range claimed {
		require.Equal(t, ids[ct.Tenant].ID, ct.RunID, "claimed with its tenant as given")
	}
}
