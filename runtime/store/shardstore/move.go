package shardstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// ErrNotDrained is wrapped by the error of MoveLogical while the logical
// shard's tenants have unfinished runs on the shard it leaves.
var ErrNotDrained = errors.New("the logical shard has unfinished runs: pause its triggers (Config.Paused) and wait for them to finish")

// Moved reports what MoveLogical copied.
type Moved struct {
	Tenants   []string // the logical shard's tenants found on the source
	Keys      int      // idempotency keys written to the destination
	Weights   int      // tenant weights set on the destination
	Schedules int      // schedules made at run time, moved
}

// MoveLogical moves what logical shard l's tenants keep, apart from
// finished history, from the shard's database from to the database to:
// their idempotency keys (so a key taken before the move stays taken),
// their weights and the schedules made at run time (deleted from from).
// It refuses, wrapping ErrNotDrained, while the tenants have a QUEUED or
// RUNNING run on from: pause the logical shard's triggers first
// (Config.Paused, in every process) and let its runs finish. It may be
// run again after a failure: what was copied is kept.
//
// Finished runs stay on from, where a sharded store still finds them (a
// run id that is not where its logical shard now points is looked up on
// every shard) and lists them, until from's retention prunes them.
// Declared schedules (//dag:schedule) follow on their own: the engine
// registers them on the shard of the new map, which deletes them from the
// old; a slot fired before the move keeps its key, so it does not fire
// twice. The last step is to map l to to's shard (Map.Move) in every
// process, and to resume it. See the package doc for the whole procedure.
func MoveLogical(ctx context.Context, from, to *pgstore.Store, l uint16) (Moved, error) {
	var mv Moved
	all, err := from.KnownTenants(ctx)
	if err != nil {
		return mv, err
	}
	for _, t := range all {
		if store.LogicalShard(t) == l {
			mv.Tenants = append(mv.Tenants, t)
		}
	}
	if len(mv.Tenants) == 0 {
		return mv, nil
	}
	n, err := from.UnfinishedRuns(ctx, mv.Tenants)
	if err != nil {
		return mv, err
	}
	if n > 0 {
		return mv, fmt.Errorf("shardstore: move logical shard %d: %d runs of its %d tenants: %w", l, n, len(mv.Tenants), ErrNotDrained)
	}
	if mv.Keys, err = from.CopyKeys(ctx, to, mv.Tenants); err != nil {
		return mv, fmt.Errorf("shardstore: move logical shard %d: %w", l, err)
	}
	ours := make(map[string]bool, len(mv.Tenants))
	for _, t := range mv.Tenants {
		ours[t] = true
	}
	weights, err := from.TenantWeights(ctx)
	if err != nil {
		return mv, fmt.Errorf("shardstore: move logical shard %d: %w", l, err)
	}
	for _, w := range weights {
		if !ours[w.Tenant] {
			continue
		}
		if err := to.SetTenantWeight(ctx, w.Tenant, w.Weight); err != nil {
			return mv, fmt.Errorf("shardstore: move logical shard %d: weight of %q: %w", l, w.Tenant, err)
		}
		mv.Weights++
	}
	for _, t := range mv.Tenants {
		scheds, err := from.ListSchedules(ctx, "", t)
		if err != nil {
			return mv, fmt.Errorf("shardstore: move logical shard %d: %w", l, err)
		}
		for _, sc := range scheds {
			if sc.Declared {
				continue
			}
			if err := to.PutSchedule(ctx, sc); err != nil {
				return mv, fmt.Errorf("shardstore: move logical shard %d: schedule %s: %w", l, sc.ScheduleRef, err)
			}
			if err := to.PauseSchedule(ctx, sc.ScheduleRef, sc.Paused, sc.NextAt); err != nil {
				return mv, fmt.Errorf("shardstore: move logical shard %d: schedule %s: %w", l, sc.ScheduleRef, err)
			}
			if err := from.DeleteSchedule(ctx, sc.ScheduleRef); err != nil && !errors.Is(err, store.ErrScheduleNotFound) {
				return mv, fmt.Errorf("shardstore: move logical shard %d: schedule %s: %w", l, sc.ScheduleRef, err)
			}
			mv.Schedules++
		}
	}
	return mv, nil
}
