package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dagenhq/dagen/runtime/store"
)

func TestValidTenant(t *testing.T) {
	for _, tc := range []struct {
		tenant string
		says   string // "" when valid
	}{
		{"t", ""},
		{"Acme Corp", ""},
		{"ünïcødé 東京 🦀", ""},
		{"\ufffd", ""}, // the replacement character itself is valid UTF-8
		{"a\u2028b", ""},
		{strings.Repeat("x", store.MaxTenantLen), ""},
		{strings.Repeat("é", store.MaxTenantLen/2), ""},
		{"", `invalid tenant "": empty`},
		{strings.Repeat("é", store.MaxTenantLen/2+1), `invalid tenant "éééééééééééééééééééééééééééééééééééééééé"…: 202 bytes long`},
		{"a\x00", `invalid tenant "a\x00": control character U+0000 at byte 1`},
		{"a\x1f", `invalid tenant "a\x1f": control character U+001F at byte 1`},
		{"a\x7f", `invalid tenant "a\x7f": control character U+007F at byte 1`},
		{"a\u009f", `invalid tenant "a\u009f": control character U+009F at byte 1`},
		{"ab\xc3", `invalid tenant "ab\xc3": not valid UTF-8 at byte 2`},
		{"\xed\xa0\x80", `invalid tenant "\xed\xa0\x80": not valid UTF-8 at byte 0`}, // a surrogate
		{" a", `invalid tenant " a": white space at the start`},
		{"a\u3000", `invalid tenant "a\u3000": white space at the end`},
	} {
		err := store.ValidTenant(tc.tenant)
		if tc.says == "" {
			if err != nil {
				t.Errorf("ValidTenant(%q) = %v, want nil", tc.tenant, err)
			}
			continue
		}
		if !errors.Is(err, store.ErrInvalidTenant) {
			t.Errorf("ValidTenant(%q) = %v, want an error wrapping ErrInvalidTenant", tc.tenant, err)
			continue
		}
		if want := tc.says + "; a tenant is 1 to 200 bytes of UTF-8 text without control characters or white space at either end"; err.Error() != want {
			t.Errorf("ValidTenant(%q) =\n\t%s\nwant\n\t%s", tc.tenant, err, want)
		}
	}
}

func ExampleValidTenant() {
	fmt.Println(store.ValidTenant("acme"))
	fmt.Println(store.ValidTenant("acme\x00"))
	// Output:
	// <nil>
	// invalid tenant "acme\x00": control character U+0000 at byte 4; a tenant is 1 to 200 bytes of UTF-8 text without control characters or white space at either end
}

func TestLogicalShardIsStable(t *testing.T) {
	// Fixed values (FNV-1a, 32 bits, mod 1024): a change of the hash
	// would move every tenant to another shard.
	for tenant, want := range map[string]uint16{"acme": 431, "tenant-1": 907, "": 453} {
		if got := store.LogicalShard(tenant); got != want {
			t.Errorf("LogicalShard(%q) = %d, want %d", tenant, got, want)
		}
	}
}
