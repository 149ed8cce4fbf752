package meters

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/dagenhq/dagen/runtime/store"
)

// DefaultTopTenants is how many tenants the backlog gauges name when
// nothing says otherwise.
const DefaultTopTenants = 10

// OtherTenants is the tenant label of the tenants past the top ones.
const OtherTenants = "other"

// BacklogConfig is what a backlog observer reads, and when.
type BacklogConfig struct {
	// Read reads the backlog (store.Fleet.Backlog).
	Read func(ctx context.Context) ([]store.BacklogEntry, error)
	// Observe reports whether to observe now: an engine observes while it
	// leads, so that a fleet reports its backlog once, not once a worker.
	Observe func() bool
	// TopTenants is how many tenants, the busiest, keep their names; the
	// rest are summed as "other". 0 means DefaultTopTenants.
	TopTenants int
	// MaxAge is how long a reading serves collections: two readers that
	// collect at once read the store once. 0 means a second.
	MaxAge time.Duration
	// Failed is told of a failed read, if set.
	Failed func(err error)
}

// backlog caches the last reading of the backlog.
type backlog struct {
	cfg BacklogConfig

	mu   sync.Mutex
	at   time.Time
	rows []store.BacklogEntry
}

// states are the backlog's task states, as the gauge labels them.
var states = [...]string{"queued", "running", "sleeping", "backoff"}

// ObserveBacklog registers the backlog gauges on mp's meter,
// dagen.backlog.tasks by tenant, workflow and state and
// dagen.backlog.oldest_queued_age by tenant and workflow; the returned
// func unregisters them. The store is read once per collection at most (MaxAge), only when
// Observe says so.
func ObserveBacklog(mp metric.MeterProvider, cfg BacklogConfig) (func() error, error) {
	if cfg.TopTenants <= 0 {
		cfg.TopTenants = DefaultTopTenants
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = time.Second
	}
	m := mp.Meter(Scope)
	g, err := m.Int64ObservableGauge(BacklogTasks,
		metric.WithDescription("Unfinished tasks of running runs, by tenant (the busiest, the rest as \"other\"), workflow and state; observed by the leader."),
		metric.WithUnit("{task}"))
	if err != nil {
		return nil, err
	}
	oldest, err := m.Float64ObservableGauge(BacklogOldest,
		metric.WithDescription("How long the oldest task of the ready queue has waited there, by tenant (the busiest, the rest as \"other\") and workflow; observed by the leader."),
		metric.WithUnit("s"))
	if err != nil {
		return nil, err
	}
	b := &backlog{cfg: cfg}
	reg, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		rows, ok := b.read(ctx)
		if !ok {
			return nil
		}
		for _, r := range Fold(rows, cfg.TopTenants) {
			for i, n := range [...]int{r.Queued, r.Running, r.Sleeping, r.Backoff} {
				o.ObserveInt64(g, int64(n), metric.WithAttributes(
					attribute.String("tenant", r.Tenant), attribute.String("workflow", r.Workflow), attribute.String("state", states[i])))
			}
			o.ObserveFloat64(oldest, r.OldestQueued.Seconds(), metric.WithAttributes(
				attribute.String("tenant", r.Tenant), attribute.String("workflow", r.Workflow)))
		}
		return nil
	}, g, oldest)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}

// read returns the cached backlog, read again when older than MaxAge; ok
// is false when nothing is to be observed.
func (b *backlog) read(ctx context.Context) ([]store.BacklogEntry, bool) {
	if b.cfg.Observe != nil && !b.cfg.Observe() {
		return nil, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.at.IsZero() && time.Since(b.at) < b.cfg.MaxAge {
		return b.rows, true
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := b.cfg.Read(ctx)
	if err != nil {
		if b.cfg.Failed != nil {
			b.cfg.Failed(err)
		}
		return nil, false
	}
	// An emptied backlog is observed as zeros for the series it had, so
	// a gauge goes to zero instead of vanishing mid-graph; after that it
	// is dropped.
	for _, old := range b.rows {
		if old.Queued+old.Running+old.Sleeping+old.Backoff == 0 {
			continue
		}
		if !slices.ContainsFunc(rows, func(r store.BacklogEntry) bool { return r.Tenant == old.Tenant && r.Workflow == old.Workflow }) {
			rows = append(rows, store.BacklogEntry{Tenant: old.Tenant, Workflow: old.Workflow})
		}
	}
	b.at, b.rows = time.Now(), rows
	return rows, true
}

// Fold keeps the top tenants by unfinished tasks (ties by name) and sums
// the others' counts per workflow under OtherTenants.
func Fold(rows []store.BacklogEntry, top int) []store.BacklogEntry {
	total := map[string]int{}
	for _, r := range rows {
		total[r.Tenant] += r.Queued + r.Running + r.Sleeping + r.Backoff
	}
	if len(total) <= top {
		return rows
	}
	tenants := make([]string, 0, len(total))
	for t := range total {
		tenants = append(tenants, t)
	}
	slices.SortFunc(tenants, func(a, b string) int { return cmp.Or(cmp.Compare(total[b], total[a]), cmp.Compare(a, b)) })
	kept := make(map[string]bool, top)
	for _, t := range tenants[:top] {
		kept[t] = true
	}
	out := make([]store.BacklogEntry, 0, len(rows))
	other := map[string]*store.BacklogEntry{}
	var order []string
	for _, r := range rows {
		if kept[r.Tenant] {
			out = append(out, r)
			continue
		}
		o := other[r.Workflow]
		if o == nil {
			o = &store.BacklogEntry{Tenant: OtherTenants, Workflow: r.Workflow}
			other[r.Workflow] = o
			order = append(order, r.Workflow)
		}
		o.Queued += r.Queued
		o.OldestQueued = max(o.OldestQueued, r.OldestQueued)
		o.Running += r.Running
		o.Sleeping += r.Sleeping
		o.Backoff += r.Backoff
	}
	for _, w := range order {
		out = append(out, *other[w])
	}
	return out
}
