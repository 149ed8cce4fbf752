package shardstore

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dagenhq/dagen/runtime/store"
)

// ErrInvalidMap is wrapped by the error of a [Map] that does not map every
// logical shard exactly once to a named shard.
var ErrInvalidMap = errors.New("invalid shard map")

// Range maps the logical shards From to To, both included, to the shard
// named Shard.
type Range struct {
	From, To uint16
	Shard    string
}

// Map says which shard holds each logical shard ([store.LogicalShard]):
// ranges that together cover 0 to store.LogicalShards-1, each logical shard
// once. It is configuration, the same in every process of a service: two
// processes with different maps would put a tenant's runs in two places.
type Map []Range

// EvenMap returns a map that gives each shard, in order, an equal run of
// logical shards (the first ones one more when they do not divide evenly).
func EvenMap(shards ...string) Map {
	var m Map
	n := len(shards)
	from := 0
	for i, name := range shards {
		size := store.LogicalShards / n
		if i < store.LogicalShards%n {
			size++
		}
		m = append(m, Range{From: uint16(from), To: uint16(from + size - 1), Shard: name})
		from += size
	}
	return m
}

// ParseMap reads a map written as String writes it: comma-separated
// ranges "from-to=shard" (or "n=shard" for one logical shard), such as
// "0-511=a,512-1023=b". It validates the map.
func ParseMap(s string) (Map, error) {
	var m Map
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		span, name, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("%w: %q is not from-to=shard (as in 0-511=a)", ErrInvalidMap, part)
		}
		lo, hi, isRange := strings.Cut(span, "-")
		if !isRange {
			hi = lo
		}
		from, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
		to, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: %q: the logical shards are numbers from 0 to %d", ErrInvalidMap, part, store.LogicalShards-1)
		}
		m = append(m, Range{From: uint16(from), To: uint16(to), Shard: strings.TrimSpace(name)})
	}
	return m, m.Validate(nil)
}

// String writes the map as ParseMap reads it.
func (m Map) String() string {
	parts := make([]string, len(m))
	for i, r := range m {
		if r.From == r.To {
			parts[i] = fmt.Sprintf("%d=%s", r.From, r.Shard)
		} else {
			parts[i] = fmt.Sprintf("%d-%d=%s", r.From, r.To, r.Shard)
		}
	}
	return strings.Join(parts, ",")
}

// Validate says what is wrong with the map, if anything: a range out of
// bounds or backwards, a logical shard mapped twice or not at all, a shard
// not among shards (when shards is not nil). Its error wraps
// [ErrInvalidMap].
func (m Map) Validate(shards []string) error {
	var owner [store.LogicalShards]string
	for _, r := range m {
		if r.From > r.To || int(r.To) >= store.LogicalShards {
			return fmt.Errorf("%w: range %d-%d=%s: a range goes up from 0 to at most %d", ErrInvalidMap, r.From, r.To, r.Shard, store.LogicalShards-1)
		}
		if r.Shard == "" {
			return fmt.Errorf("%w: range %d-%d names no shard", ErrInvalidMap, r.From, r.To)
		}
		if shards != nil && !slices.Contains(shards, r.Shard) {
			return fmt.Errorf("%w: range %d-%d maps to shard %q, which is not configured (shards: %s)", ErrInvalidMap, r.From, r.To, r.Shard, strings.Join(shards, ", "))
		}
		for l := int(r.From); l <= int(r.To); l++ {
			if owner[l] != "" {
				return fmt.Errorf("%w: logical shard %d is mapped twice, to %q and to %q", ErrInvalidMap, l, owner[l], r.Shard)
			}
			owner[l] = r.Shard
		}
	}
	for l, name := range owner {
		if name == "" {
			return fmt.Errorf("%w: logical shard %d is not mapped: every one of 0 to %d must be", ErrInvalidMap, l, store.LogicalShards-1)
		}
	}
	return nil
}

// Lookup returns the shard that holds logical shard l, or "" when the map
// does not say.
func (m Map) Lookup(l uint16) string {
	for _, r := range m {
		if r.From <= l && l <= r.To {
			return r.Shard
		}
	}
	return ""
}

// Move returns a copy of m with logical shard l mapped to shard: the last
// step of moving a logical shard (see the package doc).
func (m Map) Move(l uint16, shard string) Map {
	var out Map
	for _, r := range m {
		if l < r.From || l > r.To {
			out = append(out, r)
			continue
		}
		if r.From < l {
			out = append(out, Range{From: r.From, To: l - 1, Shard: r.Shard})
		}
		if l < r.To {
			out = append(out, Range{From: l + 1, To: r.To, Shard: r.Shard})
		}
	}
	out = append(out, Range{From: l, To: l, Shard: shard})
	slices.SortFunc(out, func(a, b Range) int { return int(a.From) - int(b.From) })
	return out
}
