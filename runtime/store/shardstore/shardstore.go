package shardstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// Shard is one named store of a sharded [Store]: a pgstore over its own
// database, in production.
type Shard struct {
	Name  string
	Store store.Store
}

// Config configures a Store. The zero value is ready to use.
type Config struct {
	// Paused lists logical shards whose tenants may not trigger new runs
	// (CreateRuns, StartRuns, CreateRunsTx and schedules fail with
	// [ErrPaused]) while their logical shard moves to another database.
	// Everything else of their runs goes on.
	Paused []uint16
	// ShardFailed, when set, is told of each failure of one shard that the
	// store went past: a call that reads or works every shard (claims,
	// heartbeats, timers, leader duties, notifications) goes on with the
	// shards that answer, so that one shard down stops only its tenants.
	ShardFailed func(shard string, err error)
}

// ErrPaused is wrapped by the error of a trigger for a tenant whose
// logical shard is paused ([Config.Paused]).
var ErrPaused = errors.New("the tenant's logical shard is paused for a move: trigger again once it is resumed")

// Store is a store.Store made of shards, each a whole store: every run,
// with its tasks, timers, signals and child runs, and its tenant's fair
// queue state, lives on the shard of its tenant's logical shard, so every
// transaction is on one shard. See the package doc.
type Store struct {
	shards  []Shard
	byName  map[string]int
	logical [store.LogicalShards]int // logical shard → index in shards
	m       Map
	paused  map[uint16]bool
	failed  func(string, error)

	// runs remembers the shard of runs this store created, claimed or
	// found, so that batches of results and heartbeats go to their shards
	// without asking. A cache: a run it does not hold is looked up.
	runsMu sync.Mutex
	runs   runCache

	claims  claimState
	lead    leadState
	closers []func() // the shards Open opened
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Elector = (*Store)(nil)
)

// rememberedGeneration bounds the run → shard cache: it holds the runs
// of this generation and of the last, and a full generation retires the
// last. A run of a worker's batch in flight is in one of them unless
// twice this many runs went by meanwhile; one that is not is looked up
// again, a query. The bound keeps a worker's memory flat: a map does not
// shrink when cleared.
const rememberedGeneration = 1 << 15

// runCache maps runs to the index of their shard, in two generations.
type runCache struct {
	recent, older map[dag.RunID]uint16
}

func (c *runCache) put(id dag.RunID, i int) {
	if c.recent == nil || len(c.recent) >= rememberedGeneration {
		c.older, c.recent = c.recent, make(map[dag.RunID]uint16)
	}
	c.recent[id] = uint16(i)
}

func (c *runCache) get(id dag.RunID) (int, bool) {
	if i, ok := c.recent[id]; ok {
		return int(i), true
	}
	i, ok := c.older[id]
	return int(i), ok
}

// New returns a store over shards, routed by m, which must map every
// logical shard to one of them. The shards belong to the caller (close
// them after the Store is no longer used); cfg may be nil.
func New(shards []Shard, m Map, cfg *Config) (*Store, error) {
	if len(shards) == 0 {
		return nil, errors.New("shardstore: no shards: configure at least one")
	}
	if len(shards) > store.LogicalShards {
		return nil, fmt.Errorf("shardstore: %d shards, more than the %d logical shards to map to them: use fewer", len(shards), store.LogicalShards)
	}
	s := &Store{shards: slices.Clone(shards), byName: make(map[string]int), m: slices.Clone(m)}
	names := make([]string, len(shards))
	for i, sh := range shards {
		if sh.Name == "" || sh.Store == nil {
			return nil, fmt.Errorf("shardstore: shard %d has no name or no store", i)
		}
		if _, dup := s.byName[sh.Name]; dup {
			return nil, fmt.Errorf("shardstore: two shards are named %q: give each its own name", sh.Name)
		}
		s.byName[sh.Name] = i
		names[i] = sh.Name
	}
	if err := m.Validate(names); err != nil {
		return nil, fmt.Errorf("shardstore: %w", err)
	}
	for l := range store.LogicalShards {
		s.logical[l] = s.byName[m.Lookup(uint16(l))]
	}
	s.paused = make(map[uint16]bool)
	if cfg != nil {
		for _, l := range cfg.Paused {
			s.paused[l] = true
		}
		s.failed = cfg.ShardFailed
	}
	s.claims.init(len(shards))
	s.lead.init(len(shards))
	return s, nil
}

// Shards returns the shards, in the order New got them.
func (s *Store) Shards() []Shard { return slices.Clone(s.shards) }

// Map returns the store's map.
func (s *Store) Map() Map { return slices.Clone(s.m) }

// ShardFor returns the shard that holds tenant's runs. A caller that
// triggers in its own transaction (TxTriggers) opens it on this shard's
// database.
func (s *Store) ShardFor(tenant string) Shard { return s.shards[s.tenantShard(tenant)] }

func (s *Store) tenantShard(tenant string) int { return s.logical[store.LogicalShard(tenant)] }

// remember records that run id lives on shard i.
func (s *Store) remember(id dag.RunID, i int) {
	s.runsMu.Lock()
	defer s.runsMu.Unlock()
	s.runs.put(id, i)
}

func (s *Store) remembered(id dag.RunID) (int, bool) {
	s.runsMu.Lock()
	defer s.runsMu.Unlock()
	return s.runs.get(id)
}

// ShardOf returns the name of the shard that holds run id: the one its id
// points to (dag.NewRunIDIn) when that shard has it, else the one of the
// others that has it, all asked at once. An id no shard knows is an error
// wrapping store.ErrRunNotFound.
func (s *Store) ShardOf(ctx context.Context, id dag.RunID) (string, error) {
	i, err := s.locate(ctx, id)
	if err != nil {
		return "", err
	}
	return s.shards[i].Name, nil
}

// locate returns the index of the shard that holds run id (see ShardOf).
func (s *Store) locate(ctx context.Context, id dag.RunID) (int, error) {
	if i, ok := s.remembered(id); ok {
		return i, nil
	}
	first := s.logical[id.Shard()%store.LogicalShards]
	_, err := s.shards[first].Store.RunStatus(ctx, id)
	if err == nil {
		s.remember(id, first)
		return first, nil
	}
	firstErr := err
	if !errors.Is(err, store.ErrRunNotFound) {
		firstErr = s.shardErr(first, "find run "+id.String(), err)
	}
	// Not where its id points: a run made before ids carried shards, by
	// other code, or moved with its logical shard.
	found := -1
	var mu sync.Mutex
	var errs []error
	s.each(ctx, func(ctx context.Context, i int, st store.Store) {
		if i == first {
			return
		}
		_, err := st.RunStatus(ctx, id)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			found = i
		case !errors.Is(err, store.ErrRunNotFound):
			errs = append(errs, s.shardErr(i, "find run "+id.String(), err))
		}
	})
	if found >= 0 {
		s.remember(id, found)
		return found, nil
	}
	if !errors.Is(firstErr, store.ErrRunNotFound) {
		errs = append(errs, firstErr)
	}
	if len(errs) > 0 {
		// A shard that did not answer may hold it: not "not found".
		return 0, errors.Join(errs...)
	}
	return 0, fmt.Errorf("shardstore: run %s: %w", id, store.ErrRunNotFound)
}

// shardErr wraps err of shard i with its name and what was done.
func (s *Store) shardErr(i int, what string, err error) error {
	return fmt.Errorf("shardstore: shard %s: %s: %w", s.shards[i].Name, what, err)
}

// report tells ShardFailed of an error of shard i the store went past.
func (s *Store) report(i int, what string, err error) {
	if s.failed != nil && err != nil && !errors.Is(err, context.Canceled) {
		s.failed(s.shards[i].Name, fmt.Errorf("%s: %w", what, err))
	}
}

// each calls fn for every shard at once and waits for them all.
func (s *Store) each(ctx context.Context, fn func(ctx context.Context, i int, st store.Store)) {
	s.eachOf(ctx, nil, fn)
}

// eachOf calls fn for the shards in idx (every shard when nil) at once
// and waits for them all.
func (s *Store) eachOf(ctx context.Context, idx []int, fn func(ctx context.Context, i int, st store.Store)) {
	if idx == nil {
		idx = make([]int, len(s.shards))
		for i := range idx {
			idx[i] = i
		}
	}
	if len(idx) == 1 {
		fn(ctx, idx[0], s.shards[idx[0]].Store)
		return
	}
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Go(func() { fn(ctx, i, s.shards[i].Store) })
	}
	wg.Wait()
}

// gather calls fn on every shard at once and returns the answers of those
// that answered. The others are reported (ShardFailed); when none
// answered, their errors are returned.
func gather[T any](ctx context.Context, s *Store, what string, idx []int, fn func(ctx context.Context, st store.Store) (T, error)) ([]T, []int, error) {
	var mu sync.Mutex
	var outs []T
	var from []int
	var errs []error
	asked := 0
	s.eachOf(ctx, idx, func(ctx context.Context, i int, st store.Store) {
		out, err := fn(ctx, st)
		mu.Lock()
		defer mu.Unlock()
		asked++
		if err != nil {
			s.report(i, what, err)
			errs = append(errs, s.shardErr(i, what, err))
			return
		}
		outs = append(outs, out)
		from = append(from, i)
	})
	if len(outs) == 0 && len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return outs, from, nil
}

// all calls fn on every shard at once and returns the errors of those
// that failed, joined: for writes every shard must take (signatures, rate
// limits).
func (s *Store) all(ctx context.Context, what string, fn func(ctx context.Context, st store.Store) error) error {
	var mu sync.Mutex
	var errs []error
	s.each(ctx, func(ctx context.Context, i int, st store.Store) {
		if err := fn(ctx, st); err != nil {
			mu.Lock()
			errs = append(errs, s.shardErr(i, what, err))
			mu.Unlock()
		}
	})
	return errors.Join(errs...)
}

// onRun runs fn on the shard of run id.
func onRun[T any](ctx context.Context, s *Store, id dag.RunID, fn func(st store.Store) (T, error)) (T, error) {
	i, err := s.locate(ctx, id)
	if err != nil {
		var zero T
		return zero, err
	}
	return fn(s.shards[i].Store)
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrRunNotFound) }
