package store

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxTenantLen is the longest tenant, in bytes. A tenant names its group
// of the fair queue, is a key of indexed columns and is written with every
// log line about its runs: 200 bytes hold any identifier (a UUID is 36, a
// domain name at most 253 in theory and far less in practice) and keep
// index entries and log lines short.
const MaxTenantLen = 200

// ErrInvalidTenant is returned for a tenant that [ValidTenant] rejects.
var ErrInvalidTenant = errors.New("invalid tenant")

// ValidTenant returns nil if tenant may name a tenant: 1 to MaxTenantLen
// bytes of valid UTF-8, without control characters (C0, DEL, C1) and
// without white space at either end, so that "acme" and "acme " are not
// two tenants that print alike. Any other text is allowed, spaces inside
// included. Otherwise its error wraps [ErrInvalidTenant] and says which
// rule the tenant breaks, quoting it (its first 40 characters).
//
// The engine checks tenants when it triggers runs; stores check them
// again in CreateRuns and StartRuns.
func ValidTenant(tenant string) error {
	bad := func(format string, args ...any) error {
		quoted := fmt.Sprintf("%.40q", tenant)
		if utf8.RuneCountInString(tenant) > 40 {
			quoted += "…" // cut short
		}
		return fmt.Errorf("%w %s: %s; a tenant is 1 to %d bytes of UTF-8 text without control characters or white space at either end",
			ErrInvalidTenant, quoted, fmt.Sprintf(format, args...), MaxTenantLen)
	}
	switch {
	case tenant == "":
		return bad("empty")
	case len(tenant) > MaxTenantLen:
		return bad("%d bytes long", len(tenant))
	}
	for i, r := range tenant {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(tenant[i:]); size == 1 {
				return bad("not valid UTF-8 at byte %d", i)
			}
		}
		if unicode.IsControl(r) {
			return bad("control character %U at byte %d", r, i)
		}
	}
	if r, _ := utf8.DecodeRuneInString(tenant); unicode.IsSpace(r) {
		return bad("white space at the start")
	}
	if r, _ := utf8.DecodeLastRuneInString(tenant); unicode.IsSpace(r) {
		return bad("white space at the end")
	}
	return nil
}
