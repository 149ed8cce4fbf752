package analysis

import (
	"strconv"
	"strings"
	"time"
)

// storedName returns the name= value, or def, and checks it.
func (a *analyzer) storedName(f *found, def string) string {
	ar, ok := f.args["name"]
	if !ok {
		return def
	}
	if strings.HasPrefix(ar.Value, "@") {
		a.errorf(ar.ValuePos, ar.End, BadName, "stored name %q may not start with @", ar.Value)
	}
	return ar.Value
}

// readCount reads the count key of f, a positive number of things at once
// (limit=, concurrency=), such as key=example, and returns it, or 0 when
// the key is not given or is wrong. omitted says what leaving the key out
// means, which is what 0 would mean too.
func (a *analyzer) readCount(f *found, key, what, example, omitted string) int {
	ar, ok := f.args[key]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(ar.Value)
	switch {
	case err != nil:
		a.errorf(ar.ValuePos, ar.End, MalformedDirective, "%s=%s: want a number of %s at once, such as %s=%s", key, ar.Value, what, key, example)
	case n <= 0:
		a.errorf(ar.ValuePos, ar.End, MalformedDirective, "%s=%s: the number of %s at once must be positive, such as %s=%s; omit %s for %s",
			key, ar.Value, what, key, example, key, omitted)
	default:
		return n
	}
	return 0
}

// readDuration reads the duration key of f into *dst: a Go duration
// (time.ParseDuration), such as key=example. omitted says what leaving the
// key out means.
//
// Zero is what an omitted key means, and what zero means differs by key
// (the engine's default, no delay, no cap, no deadline): a written 0 reads
// as "no timeout" as easily as "the default", so it is refused, with what
// leaving the key out does.
func (a *analyzer) readDuration(f *found, key, example, omitted string, dst *time.Duration) {
	ar, ok := f.args[key]
	if !ok {
		return
	}
	d, err := time.ParseDuration(ar.Value)
	if err != nil {
		a.errorf(ar.ValuePos, ar.End, MalformedDirective, "%s=%s: want a duration such as %s=%s", key, ar.Value, key, example)
		return
	}
	if d <= 0 {
		a.errorf(ar.ValuePos, ar.End, NonPositiveDuration, "%s=%s: a duration must be positive; omit %s for %s", key, ar.Value, key, omitted)
		return
	}
	*dst = d
}
