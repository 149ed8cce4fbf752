package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// PutRateLimits implements store.FlowControl.
func (s *Store) PutRateLimits(ctx context.Context, limits []store.RateLimit) error {
	var p dbsqlc.PutRateLimitsParams
	for _, l := range limits {
		if err := l.Validate(); err != nil {
			return err
		}
		p.Names = append(p.Names, l.Name)
		p.Rates = append(p.Rates, l.Rate)
		p.Bursts = append(p.Bursts, int32(l.Burst))
	}
	if len(limits) == 0 {
		return nil
	}
	if err := s.q.PutRateLimits(ctx, s.pool, p); err != nil {
		return fmt.Errorf("put %d rate limits: %w", len(limits), err)
	}
	s.flow.Store(true) // the flags are set: claim by the flow's statement
	return nil
}

// SetTenantWeight implements store.FlowControl.
func (s *Store) SetTenantWeight(ctx context.Context, tenant string, weight int) error {
	if err := store.ValidTenant(tenant); err != nil {
		return err
	}
	if err := store.ValidWeight(weight); err != nil {
		return err
	}
	if err := s.q.SetTenantWeight(ctx, s.pool, tenant, int32(weight)); err != nil {
		return fmt.Errorf("set the weight of tenant %s: %w", tenant, err)
	}
	return nil
}

// TenantWeights implements store.FlowControl.
func (s *Store) TenantWeights(ctx context.Context) ([]store.TenantWeight, error) {
	rows, err := s.q.TenantWeights(ctx, s.pool)
	if err != nil {
		return nil, fmt.Errorf("read tenant weights: %w", err)
	}
	out := make([]store.TenantWeight, len(rows))
	for i, r := range rows {
		out[i] = store.TenantWeight{Tenant: r.Tenant, Weight: int(r.Weight)}
	}
	return out, nil
}

// bucketKey names one bucket of a rate limit.
type bucketKey struct{ limit, key string }

// knownBuckets are the buckets a store made, or found made, before a
// creation (ensureBuckets): at most maxKnownBuckets, forgotten all at once
// past that (a forgotten bucket costs one statement that finds it).
type knownBuckets struct {
	mu   sync.Mutex
	seen map[bucketKey]struct{}
}

const maxKnownBuckets = 1 << 16

// ensureBuckets makes, full, the buckets of new runs' rate-limited tasks
// that this store does not know to exist, in a statement of their own
// before the runs' transaction: that transaction's enqueue then finds them
// and lets the tasks they have room for straight into the fair queue
// (Enqueue's "open" buckets), where a missing bucket parks its tasks until
// an admission makes it. Made apart, a bucket is never waited for by a
// transaction that holds the tenants' rows. (A bucket of a limit not put
// yet is not made: the admission after the limit comes makes it.)
func (s *Store) ensureBuckets(ctx context.Context, runs []store.NewRun) error {
	var p dbsqlc.EnsureBucketsParams
	s.buckets.mu.Lock()
	for i := range runs {
		for _, t := range runs[i].Tasks {
			k := bucketKey{t.RateLimit, t.RateKey}
			if _, ok := s.buckets.seen[k]; ok || t.RateLimit == "" {
				continue
			}
			if s.buckets.seen == nil || len(s.buckets.seen) >= maxKnownBuckets {
				s.buckets.seen = make(map[bucketKey]struct{})
			}
			s.buckets.seen[k] = struct{}{}
			p.Limits, p.Keys = append(p.Limits, k.limit), append(p.Keys, k.key)
		}
	}
	s.buckets.mu.Unlock()
	if len(p.Limits) == 0 {
		return nil
	}
	p.Now = s.clock()
	if err := s.q.EnsureBuckets(ctx, s.pool, p); err != nil {
		s.buckets.mu.Lock()
		for i := range p.Limits {
			delete(s.buckets.seen, bucketKey{p.Limits[i], p.Keys[i]})
		}
		s.buckets.mu.Unlock()
		return fmt.Errorf("make the buckets of %d rate limit keys: %w", len(p.Limits), err)
	}
	return nil
}

// maxAdmit bounds how many waiting tasks one admission lets in, over all
// its buckets, and minAdmit how many it reads of each at least: an
// admission's entries, uncommitted at the head of the queue, are passed
// over by every claim meanwhile, so admissions stay small and follow each
// other.
const (
	maxAdmit = 2048
	minAdmit = 16
)

// rateWakeLease is how long a bucket's look taken by an admission stays
// with it: were the admission lost with its worker, another worker looks
// at the bucket then.
const rateWakeLease = time.Second

// admitRated lets waiting tasks of due buckets into the fair queue, as
// many as each bucket has tokens for beyond those its entries there hold.
// It takes the buckets' looks first (TakeRateWakes), then, in one
// transaction, locks the buckets in key order, lets the tasks in through
// Enqueue (which locks their tenants' rows) and sets the buckets' next
// looks last. It returns how many tasks went in.
func (s *Store) admitRated(ctx context.Context, due []bucketKey) (int, error) {
	slices.SortFunc(due, func(a, b bucketKey) int {
		if a.limit != b.limit {
			return strings.Compare(a.limit, b.limit)
		}
		return strings.Compare(a.key, b.key)
	})
	due = slices.Compact(due)
	limits, keys := make([]string, len(due)), make([]string, len(due))
	for i, b := range due {
		limits[i], keys[i] = b.limit, b.key
	}
	// Take the looks first, so that of the workers that found them due
	// one admits and the others leave the buckets (and the claims that
	// take their tokens) alone.
	now := s.clock()
	until := time.Now().Add(rateWakeLease)
	if now.Valid {
		until = now.Time.Add(rateWakeLease)
	}
	taken, err := s.q.TakeRateWakes(ctx, s.pool, dbsqlc.TakeRateWakesParams{Until: tstz(until), Limits: limits, Keys: keys, Now: now})
	if err != nil {
		return 0, fmt.Errorf("take the buckets' looks: %w", err)
	}
	if len(taken) == 0 {
		return 0, nil
	}
	limits, keys = limits[:0], keys[:0]
	touched := make(map[bucketKey]int64, len(taken))
	for _, b := range taken {
		limits, keys = append(limits, b.RateLimit), append(keys, b.RateKey)
		touched[bucketKey{b.RateLimit, b.RateKey}] = b.Touched
	}
	var admitted int
	// An admission that Postgres picked as a deadlock's victim did
	// nothing, and still holds the looks it took: it tries again at once
	// rather than leaving its buckets until the looks' lease ends.
	for attempt := 1; ; attempt++ {
		admitted, err = s.admitTx(ctx, limits, keys, touched, now)
		if !isDeadlock(err) || attempt == admitAttempts {
			break
		}
	}
	if errors.Is(err, errNothingToDo) {
		// No limit of these names is in the store yet (a worker that
		// declares it puts it there): the looks taken come back when
		// their lease ends.
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return admitted, nil
}

// admitAttempts is how many times an admission runs its transaction when
// Postgres aborts it to break a deadlock.
const admitAttempts = 3

// isDeadlock reports whether err is Postgres's deadlock_detected.
func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}

// admitTx is admitRated's transaction over the buckets whose looks it
// took: it locks them, counts their spends in, lets the waiting tasks
// they have tokens for into the fair queue and sets their next looks. It
// returns how many tasks it let in.
func (s *Store) admitTx(ctx context.Context, limits, keys []string, touched map[bucketKey]int64, now pgtype.Timestamptz) (int, error) {
	admitted := 0
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		db := tx.Queue()
		if err := s.q.EnsureBuckets(ctx, db, dbsqlc.EnsureBucketsParams{Limits: limits, Keys: keys, Now: now}); err != nil {
			return fmt.Errorf("make buckets: %w", err)
		}
		buckets, err := s.q.LockBuckets(ctx, db, dbsqlc.LockBucketsParams{Limits: limits, Keys: keys, Now: now})
		if err != nil {
			return fmt.Errorf("lock buckets: %w", err)
		}
		if len(buckets) == 0 {
			return errNothingToDo
		}
		spends, err := s.q.TakeSpends(ctx, db, limits, keys)
		if err != nil {
			return fmt.Errorf("count the buckets' spends in: %w", err)
		}
		tokens, at, held := countSpends(buckets, spends)
		var set dbsqlc.SetBucketsParams
		for _, b := range buckets {
			k := bucketKey{b.RateLimit, b.RateKey}
			set.Limits, set.Keys = append(set.Limits, b.RateLimit), append(set.Keys, b.RateKey)
			set.Tokens, set.Updated = append(set.Tokens, tokens[k]), append(set.Updated, tstz(at[k]))
		}
		if err := s.q.SetBuckets(ctx, db, set); err != nil {
			return fmt.Errorf("write the buckets: %w", err)
		}
		ep := dbsqlc.EnqueueParams{Admitted: true}
		var takeRuns []pgtype.UUID
		var takeTasks []string
		wakes := dbsqlc.SetRateWakesParams{Now: now}
		each := int32(max(minAdmit, maxAdmit/len(buckets)))
		for _, b := range buckets {
			waiting, err := s.q.WaitingFor(ctx, db, dbsqlc.WaitingForParams{RateLimit: b.RateLimit, RateKey: b.RateKey, Max: each})
			if err != nil {
				return fmt.Errorf("read the tasks waiting for rate limit %s (key %q): %w", b.RateLimit, b.RateKey, err)
			}
			room := tokens[bucketKey{b.RateLimit, b.RateKey}] - float64(held[bucketKey{b.RateLimit, b.RateKey}])
			i := 0
			for ; i < len(waiting) && float64(waiting[i].RateUnits) <= room; i++ {
				w := waiting[i]
				room -= float64(w.RateUnits)
				takeRuns = append(takeRuns, w.RunID)
				takeTasks = append(takeTasks, w.Task)
				ep.RunIds = append(ep.RunIds, w.RunID)
				ep.Tasks = append(ep.Tasks, w.Task)
				ep.Signatures = append(ep.Signatures, w.Signature)
				ep.Tenants = append(ep.Tenants, w.Tenant)
				ep.IfQueued = append(ep.IfQueued, true) // a cancelled run's task is not
			}
			admitted += i
			wakes.Limits = append(wakes.Limits, b.RateLimit)
			wakes.Keys = append(wakes.Keys, b.RateKey)
			wakes.Touched = append(wakes.Touched, touched[bucketKey{b.RateLimit, b.RateKey}])
			var wake pgtype.Timestamptz
			switch {
			case i == len(waiting) && len(waiting) == int(each):
				wake = tstz(timeOf(b.Now)) // more may wait past those read: due again at once
			case i < len(waiting):
				// The tokens missing for the next one come at the rate:
				// claims give back none (they take the tokens of entries
				// the held count had), so the wait is exact.
				l := store.RateLimit{Name: b.RateLimit, Rate: b.Rate, Burst: int(b.Burst)}
				wait := l.NextToken(room, int(waiting[i].RateUnits))
				wake = tstz(timeOf(b.Now).Add(max(wait, time.Millisecond)))
			}
			wakes.Wakes = append(wakes.Wakes, wake)
		}
		if len(takeRuns) > 0 {
			if err := s.q.TakeWaiting(ctx, db, takeRuns, takeTasks); err != nil {
				return fmt.Errorf("take %d waiting tasks: %w", len(takeRuns), err)
			}
			if err := s.enqueue(ctx, db, ep); err != nil {
				return fmt.Errorf("enqueue %d tasks with tokens: %w", len(ep.Tasks), err)
			}
		}
		if err := s.setRateWakes(ctx, db, wakes); err != nil {
			return fmt.Errorf("set the buckets' next looks: %w", err)
		}
		return nil
	})
	return admitted, err
}

// setRateWakes sets the buckets' next looks, an admission's last
// statements: LockRateWakes takes their wake rows in key order, as an
// enqueue that parks tasks at them does, and then SetRateWakes moves them
// (its DELETE, UPDATE and INSERT take rows in no set order). On the
// admission's pipeline both are queued: their errors come with the commit.
func (s *Store) setRateWakes(ctx context.Context, db dbsqlc.DBTX, wakes dbsqlc.SetRateWakesParams) error {
	if err := s.q.LockRateWakes(ctx, db, wakes.Limits, wakes.Keys); err != nil {
		return err
	}
	return s.q.SetRateWakes(ctx, db, wakes)
}

// countSpends counts the spends taken from the locked buckets into their
// tokens, in the order they were taken, as if each claim had updated its
// bucket then (gaining what the bucket gained up to it, at most up to its
// burst), and then up to the buckets' now. It returns each bucket's tokens
// and their time (now, or a later claim's), and the units its entries in
// the ready queue hold.
func countSpends(buckets []dbsqlc.LockBucketsRow, rows []dbsqlc.TakeSpendsRow) (tokens map[bucketKey]float64, at map[bucketKey]time.Time, held map[bucketKey]int64) {
	type state struct {
		tokens, rate, burst float64
		at                  time.Time
	}
	states := make(map[bucketKey]*state, len(buckets))
	for _, b := range buckets {
		states[bucketKey{b.RateLimit, b.RateKey}] = &state{tokens: b.Tokens, rate: b.Rate, burst: float64(b.Burst), at: timeOf(b.UpdatedAt)}
	}
	gain := func(st *state, to time.Time) {
		if to.After(st.at) {
			st.tokens = min(st.burst, st.tokens+st.rate*to.Sub(st.at).Seconds())
			st.at = to
		}
	}
	held = make(map[bucketKey]int64, len(buckets))
	for _, r := range rows { // spends oldest first
		k := bucketKey{r.RateLimit, r.RateKey}
		st := states[k]
		switch {
		case st == nil:
		case r.Kind == "held":
			held[k] = r.Units
		default:
			gain(st, timeOf(r.SpentAt))
			st.tokens -= float64(r.Units)
		}
	}
	tokens, at = make(map[bucketKey]float64, len(buckets)), make(map[bucketKey]time.Time, len(buckets))
	for _, b := range buckets {
		k := bucketKey{b.RateLimit, b.RateKey}
		gain(states[k], timeOf(b.Now))
		// A claim that began after the admission may have taken its
		// tokens later than the admission's now: the bucket's time is the
		// later of the two, so that no interval is gained twice.
		tokens[k], at[k] = states[k].tokens, states[k].at
	}
	return tokens, at, held
}

// rateWaits reads why the tasks of run id wait for a rate limit, by task:
// "rate limit stripe (key acct_42): next token in …" (store.RateWait).
func (s *Store) rateWaits(ctx context.Context, db dbsqlc.DBTX, id dag.RunID) (map[string]string, error) {
	rows, err := s.q.RateWaits(ctx, db, s.clock(), uuidOf(id))
	if err != nil {
		return nil, fmt.Errorf("read the rate limits run %s waits for: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		l := store.RateLimit{Name: r.RateLimit, Rate: r.Rate}
		out[r.Task] = store.RateWait(l, r.RateKey, r.Tokens-float64(r.Held), int(r.Ahead), int(r.RateUnits))
	}
	return out, nil
}
