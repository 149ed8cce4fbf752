package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/runtime/store/pgstore"
	"github.com/dagenhq/dagen/runtime/store/shardstore"
)

// shardFlags give the shards of a sharded deployment (shardstore): their
// names and URLs, and the map of logical shards to them.
type shardFlags struct {
	shards, shardMap string
}

// addShardFlags registers -shards and -shard-map on fs.
func addShardFlags(fs *flag.FlagSet, f *shardFlags) {
	fs.StringVar(&f.shards, "shards", "", "the shards, name=URL separated by spaces")
	fs.StringVar(&f.shardMap, "shard-map", "", "logical shards to shards, as 0-511=a,512-1023=b")
}

// withEnv returns f with $DAGEN_SHARDS and $DAGEN_SHARD_MAP for what the
// flags left empty.
func (f shardFlags) withEnv() shardFlags {
	if f.shards == "" {
		f.shards = os.Getenv("DAGEN_SHARDS")
	}
	if f.shardMap == "" {
		f.shardMap = os.Getenv("DAGEN_SHARD_MAP")
	}
	return f
}

// parse reads the shards and the map (an even one when none is given).
func (f shardFlags) parse() ([]shardstore.ShardURL, shardstore.Map, error) {
	urls, err := shardstore.ParseShards(f.shards)
	if err != nil {
		return nil, nil, err
	}
	if f.shardMap == "" {
		names := make([]string, len(urls))
		for i, u := range urls {
			names[i] = u.Name
		}
		return urls, shardstore.EvenMap(names...), nil
	}
	m, err := shardstore.ParseMap(f.shardMap)
	if err != nil {
		return nil, nil, err
	}
	return urls, m, nil
}

// openSharded connects to every shard (schema, when set, on each) and
// returns the sharded store over them, and what closes their pools.
func openSharded(ctx context.Context, f shardFlags, schema string) (*shardstore.Store, func(), error) {
	urls, m, err := f.parse()
	if err != nil {
		return nil, nil, err
	}
	var pools []*pgxpool.Pool
	closeAll := func() {
		for _, p := range pools {
			p.Close()
		}
	}
	var shards []shardstore.Shard
	for _, u := range urls {
		pool, err := connect(ctx, u.URL, schema)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("shard %s: %w", u.Name, err)
		}
		pools = append(pools, pool)
		st, err := pgstore.New(ctx, pool, nil)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("shard %s: %w", u.Name, err)
		}
		shards = append(shards, shardstore.Shard{Name: u.Name, Store: st})
	}
	s, err := shardstore.New(shards, m, nil)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return s, closeAll, nil
}

// migrateShards runs migrate sub on every shard, one after the other: in
// text, each shard's output under a "shard NAME (URL host)" line; in JSON,
// one object with each shard's output by name. The exit code is the worst
// of the shards'.
func migrateShards(ctx context.Context, sub string, f migrateFlags, sf shardFlags, stdout, stderr io.Writer) int {
	urls, _, err := sf.parse()
	if err != nil {
		fmt.Fprintf(stderr, "dagen migrate %s: %v\n", sub, err)
		return ExitError
	}
	code := ExitOK
	outs := make(map[string]json.RawMessage)
	for _, u := range urls {
		var out bytes.Buffer
		w := io.Writer(&out)
		if !f.json {
			fmt.Fprintf(stdout, "shard %s:\n", u.Name)
			w = stdout
		}
		c := func() int {
			pool, err := connect(ctx, u.URL, f.schema)
			if err != nil {
				fmt.Fprintf(stderr, "dagen migrate %s: shard %s: %v\n", sub, u.Name, err)
				return ExitError
			}
			defer pool.Close()
			if sub == "up" {
				return migrateUp(ctx, pool, f, w, stderr)
			}
			return migrateStatus(ctx, pool, f, w, stderr)
		}()
		code = max(code, c)
		if f.json && out.Len() > 0 {
			outs[u.Name] = json.RawMessage(bytes.TrimSpace(out.Bytes()))
		}
	}
	if f.json {
		printJSON(stdout, map[string]any{"shards": outs})
	}
	return code
}

// errShardsAndDB is the error of a command given both -db and shards.
var errShardsAndDB = errors.New("-db and -shards (or DAGEN_SHARDS) both name databases: give one")
