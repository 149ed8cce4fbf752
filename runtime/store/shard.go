package store

import "hash/fnv"

// LogicalShards is how many logical shards tenants hash to. A sharded
// store maps ranges of logical shards to databases, so that adding a
// database moves whole logical shards, never single tenants. It is fixed:
// changing it would move every tenant. It fits the bits a run id carries
// (dag.MaxRunIDShard).
const LogicalShards = 1024

// LogicalShard returns tenant's logical shard, 0 to LogicalShards-1: the
// 32-bit FNV-1a hash of the tenant's bytes, modulo LogicalShards. It is
// stable across processes, versions and platforms, so the engine that
// mints a run's id (dag.NewRunIDIn) and the sharded store that routes the
// run agree on it.
func LogicalShard(tenant string) uint16 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(tenant)) // a hash.Hash never fails to write
	return uint16(h.Sum32() % LogicalShards)
}
