// Package shardstore is a store.Store made of stores: tenants spread over
// several Postgres databases (shards), each a whole pgstore, and one
// system to the engine, the console and the dagen command.
//
// # Routing
//
// A tenant hashes to one of store.LogicalShards (1,024) logical shards
// (store.LogicalShard: FNV-1a), and a [Map] of ranges sends each logical
// shard to a named shard. A run and everything of it (its tasks, timers,
// signals, child runs, which keep their parent's tenant) and its tenant's
// fair-queue state live on that shard, so every transaction is on one
// database. Adding a database moves whole logical shards, never single
// tenants (see Moving a logical shard).
//
// The engine mints run ids that carry their tenant's logical shard
// (dag.NewRunIDIn), so a run is found from its id with one query on its
// shard; an id that carries none (made by other code, or before), or
// whose logical shard has moved since, is looked up on every shard at
// once. The store remembers the shard of the runs it creates, claims and
// finds, so batches of results and heartbeats go straight to their
// shards.
//
// # Workers
//
// A worker serves every shard. A claim is split between the shards with
// work in proportion to their fair queues' next rounds (the places the
// queue hands out before any tenant gets a second: HeadCounter), so the
// tenants of all shards take turns as in one queue, and every shard with
// work gets a place when the claim has enough; within a shard the fair
// queue is unchanged. A shard whose last claim came back short is skipped
// until it notifies, takes a trigger or a completion that enqueued, or a
// claim is not filled by the others. Notifications of every shard are
// merged into one channel.
//
// Each shard elects its own leader (its pgstore's lease): the sharded store
// is one store.Elector that leads when it leads any shard, and its
// leader's duties (rescuing expired leases, reporting unserved tasks,
// pruning) run on the shards it leads. Timers and schedules need no
// leader: any worker fires them, on every shard.
//
// # One shard down
//
// A call that works every shard (claims, heartbeats, timers, leader
// duties, subscriptions, what a worker serves) goes on with the shards
// that answer and reports the others to Config.ShardFailed; it fails only
// when every shard fails. A batch of results stores each shard's part in
// its own transaction: when one shard fails and others do not, its
// results come back not applied (store.OutcomeStale), so the worker moves
// on, and those attempts run again once the shard is back, as attempts
// whose results were lost do. A trigger, read or action on a run of the
// shard down fails and names the shard. So the failure of one shard stops
// its tenants only.
//
// # What holds per shard
//
// A batch of CreateRuns or StartRuns over several shards is one
// transaction a shard, not one in all: a shard that fails leaves the
// shards before it created (ids are checked new first, so a retried batch
// with the same ids creates nothing twice; use idempotency keys). A trigger
// in the caller's transaction (store.TxTriggers) must be on the database of
// the runs' shard: open it on ShardFor(tenant)'s pool, one transaction a
// shard, else ErrWrongShard. Concurrency caps and rate limits count per
// shard: a cap of n over tenants of three shards lets up to 3n run. The
// place of a queued task (QueuePlaces) is counted in its shard's queue,
// and a continuation or an eager start weighs the tenants of its own
// shard, not the queues of the others.
//
// # Operators
//
// Lists merge every shard's pages by run id (ids are time ordered) with
// the same keyset cursor; counts and backlogs add up; workers are merged
// by id. The dagen command takes the shards as -shards (or DAGEN_SHARDS):
// migrate and check run on every shard, runs and ui show them as one.
//
// # Moving a logical shard
//
// Without losing or duplicating a run, in four steps: pause the logical
// shard's triggers in every process (Config.Paused: its triggers fail
// with ErrPaused, everything else of its runs goes on); wait until its
// runs have finished (MoveLogical refuses before); copy its tenants' state
// with MoveLogical (idempotency keys, weights, schedules); then map the
// logical shard to its new shard (Map.Move) and resume it, in every
// process. Finished runs stay on the old shard, found by id and listed,
// until its retention prunes them. docs/sharding.md has the procedure,
// the online version and the sizing.
package shardstore
