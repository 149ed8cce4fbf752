package shardstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dagenhq/dagen/runtime/store"
)

// claimState is what claims remember of each shard between calls.
type claimState struct {
	// idle marks a shard whose last claim came back short: its queue is
	// empty for these workers, and claims skip it until it may have work
	// again (a notification, a trigger or a completion that enqueued on
	// it), or until every shard looks idle, when a claim asks them all:
	// the poll that stays the truth.
	idle []atomic.Bool
	// turn rotates the shard that goes first when a claim has fewer
	// places than shards have work.
	turn atomic.Uint64
}

func (c *claimState) init(n int) { c.idle = make([]atomic.Bool, n) }

// busy notes that shard i may have work again.
func (s *Store) busy(i int) { s.claims.idle[i].Store(false) }

// HeadCounter is the part of a shard's store that counts the places of the
// fair queue's next round (pgstore.Store.QueueHead). A claim over several
// shards with work splits its limit by these counts; over shards that
// cannot count, it splits evenly.
type HeadCounter interface {
	QueueHead(ctx context.Context) (int, error)
}

// ClaimTasks claims from the shards with work, in proportion to the
// places of their fair queues' next rounds (HeadCounter), so that one
// claim serves the tenants of every shard as one fair queue would serve
// them all: a shard with a single heavy tenant gets one place a round, not
// one place a task. Every shard with work gets a place when the limit has
// enough (else they take turns, call by call). The places the shards leave
// unused go, in a second round, to those that filled theirs and to those
// the first round passed over as idle. Within a shard the fair queue
// decides. A shard that fails is passed over
// (Config.ShardFailed) unless all do.
func (s *Store) ClaimTasks(ctx context.Context, p store.ClaimParams) ([]store.ClaimedTask, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	cands := s.candidates()
	shares := s.split(ctx, cands, p.Limit)
	got, full, err := s.claimRound(ctx, p, shares)
	if err != nil {
		return nil, err
	}
	if left := p.Limit - slots(p, got); left > 0 {
		// The places left go to the shards that filled theirs and to
		// those passed over as idle: they may have work no notification
		// told of (a rescue, a timer, a capped run admitted, another
		// process's trigger), and a claim that is not filled is the poll
		// that finds it.
		rest := full
		for i := range s.shards {
			if !slices.Contains(cands, i) {
				rest = append(rest, i)
			}
		}
		if len(rest) > 0 {
			more, _, err := s.claimRound(ctx, p, evenly(rest, left, int(s.claims.turn.Load())))
			if err == nil {
				got = append(got, more...)
			}
		}
	}
	return interleave(got), nil
}

// candidates returns the shards a claim asks: those not idle, or all when
// every one is.
func (s *Store) candidates() []int {
	var out []int
	for i := range s.shards {
		if !s.claims.idle[i].Load() {
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		for i := range s.shards {
			out = append(out, i)
		}
	}
	return out
}

// split divides limit between the candidate shards by their queue heads.
func (s *Store) split(ctx context.Context, cands []int, limit int) map[int]int {
	turn := int(s.claims.turn.Add(1))
	if len(cands) == 1 {
		return map[int]int{cands[0]: limit}
	}
	weights := make(map[int]int, len(cands))
	var mu sync.Mutex
	s.eachOf(ctx, cands, func(ctx context.Context, i int, st store.Store) {
		w := 1
		if hc, ok := st.(HeadCounter); ok {
			n, err := hc.QueueHead(ctx)
			if err != nil {
				s.report(i, "count the queue head", err)
				n = 1 // let the claim find out
			}
			w = n
		}
		mu.Lock()
		weights[i] = w
		mu.Unlock()
	})
	var with []int
	total := 0
	for _, i := range cands {
		if weights[i] > 0 {
			with = append(with, i)
			total += weights[i]
		} else {
			s.claims.idle[i].Store(true)
		}
	}
	if len(with) == 0 {
		return nil
	}
	rotate(with, turn)
	if limit < len(with) {
		return evenly(with, limit, 0)
	}
	if total <= limit {
		// The whole next round fits: every shard its round, and the
		// places over it in proportion again.
		shares := make(map[int]int, len(with))
		for _, i := range with {
			shares[i] = weights[i]
		}
		for i, n := range proportional(with, weights, total, limit-total) {
			shares[i] += n
		}
		return shares
	}
	// One place each, the rest by the heads.
	shares := make(map[int]int, len(with))
	for _, i := range with {
		shares[i] = 1
		weights[i]--
		total--
	}
	for i, n := range proportional(with, weights, total, limit-len(with)) {
		shares[i] += n
	}
	return shares
}

// proportional splits n places between shards by weights (summing to
// total), by largest remainder, the earlier shards first on ties.
func proportional(shards []int, weights map[int]int, total, n int) map[int]int {
	out := make(map[int]int, len(shards))
	if n <= 0 {
		return out
	}
	if total <= 0 {
		return evenly(shards, n, 0)
	}
	given := 0
	rem := make(map[int]int, len(shards))
	for _, i := range shards {
		out[i] = n * weights[i] / total
		rem[i] = n * weights[i] % total
		given += out[i]
	}
	for given < n {
		best := -1
		for _, i := range shards {
			if best < 0 || rem[i] > rem[best] {
				best = i
			}
		}
		out[best]++
		rem[best] = -1
		given++
	}
	return out
}

// evenly splits n places between shards, the first ones (from turn on)
// one more when they do not divide evenly.
func evenly(shards []int, n, turn int) map[int]int {
	out := make(map[int]int, len(shards))
	k := len(shards)
	for j := range k {
		i := shards[(j+turn)%k]
		out[i] = n / k
		if j < n%k {
			out[i]++
		}
	}
	for i, v := range out {
		if v == 0 {
			delete(out, i)
		}
	}
	return out
}

func rotate(xs []int, turn int) {
	if len(xs) == 0 {
		return
	}
	k := turn % len(xs)
	tmp := append(append([]int(nil), xs[k:]...), xs[:k]...)
	copy(xs, tmp)
}

// claimRound claims shares from their shards at once. It returns the
// batches by shard, in shard order, and the shards that filled their
// share.
func (s *Store) claimRound(ctx context.Context, p store.ClaimParams, shares map[int]int) ([][]store.ClaimedTask, []int, error) {
	var idx []int
	for i := range s.shards {
		if shares[i] > 0 {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, nil, nil
	}
	batches := make([][]store.ClaimedTask, len(s.shards))
	var mu sync.Mutex
	var errs []error
	s.eachOf(ctx, idx, func(ctx context.Context, i int, st store.Store) {
		q := p
		q.Limit = shares[i]
		got, err := st.ClaimTasks(ctx, q)
		if err != nil {
			s.report(i, "claim tasks", err)
			mu.Lock()
			errs = append(errs, s.shardErr(i, "claim tasks", err))
			mu.Unlock()
			return
		}
		s.claims.idle[i].Store(!q.Filled(got))
		for _, ct := range got {
			s.remember(ct.RunID, i)
		}
		batches[i] = got
	})
	if len(errs) == len(idx) {
		return nil, nil, errors.Join(errs...)
	}
	var out [][]store.ClaimedTask
	var full []int
	for _, i := range idx {
		if batches[i] != nil {
			out = append(out, batches[i])
		}
		if q := (store.ClaimParams{Limit: shares[i], Extra: p.Extra}); q.Filled(batches[i]) {
			full = append(full, i)
		}
	}
	return out, full, nil
}

func count(batches [][]store.ClaimedTask) int {
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	return n
}

// slots counts the slots the claimed batches take (store.ClaimParams.Slots).
func slots(p store.ClaimParams, batches [][]store.ClaimedTask) int {
	n := 0
	for _, b := range batches {
		n += p.Slots(b)
	}
	return n
}

// interleave merges the shards' batches one task of each in turn, so that
// a worker that starts them in order favours no shard.
func interleave(batches [][]store.ClaimedTask) []store.ClaimedTask {
	out := make([]store.ClaimedTask, 0, count(batches))
	for k := 0; len(out) < cap(out); k++ {
		for _, b := range batches {
			if k < len(b) {
				out = append(out, b[k])
			}
		}
	}
	return out
}
