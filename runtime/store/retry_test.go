package store_test

import (
	"errors"
	"testing"

	"github.com/dagenhq/dagen/runtime/store"
)

func TestParseRetryMode(t *testing.T) {
	for in, want := range map[string]store.Retry{
		"failed":            {Mode: store.RetryFailed},
		"failed+downstream": {Mode: store.RetryFailedDownstream},
		"from=pack":         {Mode: store.RetryFrom, From: "pack"},
		"all":               {Mode: store.RetryAll},
	} {
		got, err := store.ParseRetryMode(in)
		if err != nil || got != want {
			t.Errorf("ParseRetryMode(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if got.String() != in {
			t.Errorf("%+v.String() = %q, want %q", got, got.String(), in)
		}
	}
	for _, in := range []string{"", "from", "from=", "failed,all", "FAILED"} {
		if _, err := store.ParseRetryMode(in); err == nil {
			t.Errorf("ParseRetryMode(%q): want an error", in)
		}
	}
	if d := (store.Retry{Mode: store.RetryFailedDownstream, Operator: "alice"}).Detail(); d != "retried by alice: failed+downstream" {
		t.Errorf("Detail = %q", d)
	}
	if !errors.Is(store.ErrUnknownStep, store.ErrInvalidRun) {
		t.Error("ErrUnknownStep must wrap ErrInvalidRun")
	}
}
