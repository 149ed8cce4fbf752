package shardstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// ShardURL names a shard and the Postgres database it is on.
type ShardURL struct {
	Name string
	URL  string
}

// ParseShards reads shards written "name=url", separated by white space
// (a URL may hold commas: several hosts), such as
// "a=postgres://db-a/dagen b=postgres://db-b/dagen". It is the format of
// the DAGEN_SHARDS variable of the dagen command.
func ParseShards(s string) ([]ShardURL, error) {
	var out []ShardURL
	for _, f := range strings.Fields(s) {
		name, url, ok := strings.Cut(f, "=")
		if !ok || name == "" || url == "" {
			return nil, fmt.Errorf("shardstore: shard %q is not name=url (as in a=postgres://db-a/dagen)", f)
		}
		out = append(out, ShardURL{Name: name, URL: url})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("shardstore: no shards: list them as name=url, separated by spaces")
	}
	return out, nil
}

// Open opens a pgstore on each shard's database (pgstore.OpenConfig:
// connected, migrated) with pcfg, and returns a Store over them routed by
// m (EvenMap of the shards, in order, when m is nil) that owns them:
// Close closes them. pcfg and cfg may be nil.
func Open(ctx context.Context, shards []ShardURL, m Map, cfg *Config, pcfg *pgstore.Config) (*Store, error) {
	if m == nil {
		names := make([]string, len(shards))
		for i, sh := range shards {
			names[i] = sh.Name
		}
		m = EvenMap(names...)
	}
	var opened []Shard
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	for _, sh := range shards {
		st, err := pgstore.OpenConfig(ctx, sh.URL, pcfg)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("shardstore: open shard %s: %w", sh.Name, err)
		}
		closers = append(closers, st.Close)
		opened = append(opened, Shard{Name: sh.Name, Store: st})
	}
	s, err := New(opened, m, cfg)
	if err != nil {
		closeAll()
		return nil, err
	}
	s.closers = closers
	return s, nil
}

// Close closes the shards' stores when Open opened them; shards passed to
// New belong to the caller.
func (s *Store) Close() {
	for _, c := range s.closers {
		c()
	}
}
