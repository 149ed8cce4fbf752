package store

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxKeyLen is the longest idempotency key, in bytes.
const MaxKeyLen = 500

// ErrInvalidKey is wrapped by the error ValidKey returns.
var ErrInvalidKey = errors.New("invalid idempotency key")

// ValidKey checks an idempotency key (NewRun.Key): empty (no key), or at
// most MaxKeyLen bytes of UTF-8.
func ValidKey(key string) error {
	switch {
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidKey, len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: %q is not UTF-8", ErrInvalidKey, key)
	}
	return nil
}
