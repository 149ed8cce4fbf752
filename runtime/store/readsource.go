package store

import (
	"fmt"
	"time"

	"github.com/dagenhq/dagen/internal/textfmt"
)

// ReadSource says where an operator's reads come from, for the console and
// the dagen command to show: a replica and how far behind its primary it
// is, or the primary and why, when a replica was configured but could not
// serve. The zero value is the primary with no replica configured: nothing
// to show.
type ReadSource struct {
	// Replica is set when reads go to a standby.
	Replica bool
	// Behind is how many bytes of WAL the replica has yet to replay to
	// reach the primary; Lag, when Behind is not zero, is how long ago the
	// replica replayed its latest transaction.
	Behind int64
	Lag    time.Duration
	// Fallback, when set, is why reads go to the primary although a
	// replica is configured: it is unreachable, or has not yet replayed
	// an action made here.
	Fallback string
}

// String is the line pages and listings show: "replica: up to date",
// "replica: 1.2s behind (340 kB of WAL)", "reading from the primary: …",
// or "" for the zero value.
func (s ReadSource) String() string {
	behind := s.Distance()
	switch {
	case s.Fallback != "" && behind != "":
		return "reading from the primary: " + s.Fallback + "; the replica is " + behind
	case s.Fallback != "":
		return "reading from the primary: " + s.Fallback
	case !s.Replica:
		return ""
	case behind == "":
		return "replica: up to date"
	}
	return "replica: " + behind
}

// Distance is how far behind the replica is, "1.2s behind (340 kB of
// WAL)", or "" when it is not.
func (s ReadSource) Distance() string {
	if s.Behind <= 0 {
		return ""
	}
	return fmt.Sprintf("%s behind (%s of WAL)", textfmt.Duration(s.Lag), walBytes(s.Behind))
}

func walBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
}
