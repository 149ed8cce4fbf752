package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dagenhq/dagen/runtime/store"
)

// What a worker tells its store (store.Deploys) so a deploy strands no
// run: the signatures it serves (in its worker record, kept alive by
// heartbeats) and what they mean (recorded once per definition, for
// `dagen check -db`).
// The leader logs a WAITING event for queued tasks no live worker serves.

// Waiting is a QUEUED task that no live worker serves: it waits, and is
// not failed, for a worker whose code has its signature.
type Waiting = store.UnservedTask

// WaitingMessage says why a task is not running:
// "waiting: no live worker serves Ship (signature 3f2a…) since 10:42:05".
func WaitingMessage(w Waiting) string {
	msg := "waiting: " + store.WaitingDetail(w.Step, w.Signature)
	if !w.Since.IsZero() {
		msg += " since " + w.Since.Local().Format(time.DateTime)
	}
	return msg
}

// serve publishes the signatures this worker serves when they changed
// since it last did (Register after Start). It runs before each heartbeat.
func (e *Engine) serve(ctx context.Context) {
	e.recordSignatures(ctx)
	sigs := e.servedSignatures()
	if e.published != nil && slices.Equal(*e.published, sigs) {
		return
	}
	if err := e.store.Serve(ctx, e.cfg.WorkerID, store.Serving{Signatures: sigs, Concurrency: e.cfg.Concurrency}); err != nil {
		if ctx.Err() == nil {
			e.health.Failed("publish served signatures", err)
		}
		return
	}
	e.published = &sigs
}

// recordSignatures records what the signatures of the registered
// definitions mean, once per definition.
func (e *Engine) recordSignatures(ctx context.Context) {
	e.mu.RLock()
	regs := make([]*registered, 0, len(e.defs))
	for _, r := range e.defs {
		regs = append(regs, r)
	}
	e.mu.RUnlock()
	for _, r := range regs {
		e.recordOnce(ctx, r)
	}
}

// recordOnce records r's signatures, and puts its rate limits in the
// store, unless that was done; a failure is logged and tried again later.
func (e *Engine) recordOnce(ctx context.Context, r *registered) {
	if r.recorded.Load() {
		return
	}
	if len(r.def.RateLimits) > 0 {
		limits := make([]store.RateLimit, len(r.def.RateLimits))
		for i, l := range r.def.RateLimits {
			limits[i] = l.store()
		}
		if err := e.store.PutRateLimits(ctx, limits); err != nil {
			if ctx.Err() == nil {
				e.log.Warn("dagen: put rate limits failed; will try again", "workflow", r.def.Name, "err", err)
			}
			return
		}
	}
	if err := e.store.RecordSignatures(ctx, r.infos); err != nil {
		if ctx.Err() == nil {
			e.log.Warn("dagen: record signatures failed; will try again", "workflow", r.def.Name, "err", err)
		}
		return
	}
	r.recorded.Store(true)
}

// waitingTasks returns the QUEUED tasks of an unfinished run that no live
// worker serves.
func (e *Engine) waitingTasks(ctx context.Context, res *RunResult) ([]Waiting, error) {
	if res.Status.Terminal() {
		return nil, nil
	}
	queued := false
	for _, t := range res.Tasks {
		queued = queued || t.Status == store.TaskQueued
	}
	if !queued {
		return nil, nil
	}
	w, err := e.store.Unserved(ctx, res.ID)
	if err != nil {
		return nil, fmt.Errorf("read tasks waiting for a worker: %w", err)
	}
	// This engine serves what it registered once it works (a manual
	// engine, whenever it is polled), heartbeat or not.
	working := e.running() != nil || e.cfg.Manual
	if working {
		mine := e.servedSignatures()
		w = slices.DeleteFunc(w, func(t Waiting) bool {
			_, found := slices.BinarySearch(mine, t.Signature)
			return found
		})
	}
	return w, nil
}
