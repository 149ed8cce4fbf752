package shardstore_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/shardstore"
)

// A service declares its shards (names and URLs) and, optionally, the map
// of logical shards to them; an engine over the sharded store is one
// system over them all. (Not run: it needs the databases.)
func Example() {
	ctx := context.Background()
	shards, err := shardstore.ParseShards(os.Getenv("DAGEN_SHARDS")) // "a=postgres://db-a/dagen b=postgres://db-b/dagen"
	if err != nil {
		log.Fatal(err)
	}
	st, err := shardstore.Open(ctx, shards, nil, nil, nil) // nil map: an even one
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	e, err := engine.New(st, nil)
	if err != nil {
		log.Fatal(err)
	}
	_ = e // register workflows, Start, Trigger as over one store
}

// The map: logical shards to named shards, validated, and the step of a
// move that sends one logical shard elsewhere.
func ExampleMap() {
	m := shardstore.EvenMap("a", "b")
	fmt.Println(m)
	l := store.LogicalShard("acme")
	fmt.Println("acme is in logical shard", l, "on", m.Lookup(l))
	moved := m.Move(l, "b")
	fmt.Println(moved, "acme on", moved.Lookup(l))
	_, err := shardstore.ParseMap("0-511=a")
	fmt.Println(err)
	// Output:
	// 0-511=a,512-1023=b
	// acme is in logical shard 431 on a
	// 0-430=a,431=b,432-511=a,512-1023=b acme on b
	// invalid shard map: logical shard 512 is not mapped: every one of 0 to 1023 must be
}
