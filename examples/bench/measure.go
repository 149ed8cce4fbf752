package main

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/bench/figures"
	"github.com/dagenhq/dagen/bench/procstat"
)

// window measures the resources a timed window used (package procstat:
// this process's CPU, that of every process named postgres, and that of
// the backends serving this benchmark's pool), the work the server did
// (pgWork), and how often backends waited for NOTIFY's lock.
type window struct {
	win   *procstat.Window
	waits *waitSampler
	pool  *pgxpool.Pool
	work  pgWork // at the start; ok false when it could not be read
}

// pgWork is what the server's statistics count of its work: the shared
// buffers its backends read or found (pg_stat_database, every database)
// and the WAL it wrote (pg_stat_wal). Unlike CPU time, they do not move
// with what else the host runs, so a change's cost shows in them on a
// noisy host; like the Postgres CPU, they count every user of the server.
type pgWork struct {
	ok                           bool
	buffers, walRecords, walByte int64
}

func readWork(ctx context.Context, pool *pgxpool.Pool) pgWork {
	var w pgWork
	err := pool.QueryRow(ctx, `SELECT (SELECT sum(blks_hit + blks_read) FROM pg_stat_database)::bigint,
		wal_records, wal_bytes::bigint FROM pg_stat_wal`).Scan(&w.buffers, &w.walRecords, &w.walByte)
	w.ok = err == nil
	return w
}

func (b *bench) startWindow(ctx context.Context) *window {
	lists := make([]func(context.Context) []int, len(b.pools))
	for i, pool := range b.pools {
		lists[i] = procstat.Backends(pool, appName)
	}
	own := func(ctx context.Context) []int {
		var pids []int
		for _, list := range lists {
			pids = append(pids, list(ctx)...)
		}
		return pids
	}
	return &window{win: procstat.Start(ctx, own), waits: b.startWaits(ctx), pool: b.pool, work: readWork(ctx, b.pool)}
}

// stop ends the window and writes its figures to res; wall is the timed
// window's length.
func (w *window) stop(ctx context.Context, res *Result, wall time.Duration) {
	u := w.win.Stop(ctx)
	if active, notify := w.waits.stop(); active > 0 {
		res.NotifyWaitPct = figures.Round(100*float64(notify)/float64(active), 1)
	}
	res.StealPct = figures.Round(u.StealPct, 1)
	sec := wall.Seconds()
	res.Seconds = figures.Round(sec, 3)
	res.WorkerCPUSec = figures.Round(u.WorkerCPU, 2)
	res.WorkerGCCPUSec = figures.Round(u.WorkerGCCPU, 2)
	res.PGCPUSec = figures.Round(u.PGCPU, 2)
	res.PGOwnCPUSec = figures.Round(u.PGOwnCPU, 2)
	if end := readWork(ctx, w.pool); w.work.ok && end.ok {
		res.PGBuffers = end.buffers - w.work.buffers
		res.PGWALRecords = end.walRecords - w.work.walRecords
		res.PGWALBytes = end.walByte - w.work.walByte
	}
	if sec > 0 {
		res.WorkerCPUPct = figures.Round(100*u.WorkerCPU/sec, 0)
		res.PGCPUPct = figures.Round(100*u.PGCPU/sec, 0)
		res.PGOwnCPUPct = figures.Round(100*u.PGOwnCPU/sec, 0)
	}
}

// waitEvery is how often the wait sampler looks at pg_stat_activity.
const waitEvery = 20 * time.Millisecond

// waitSampler counts, every waitEvery, the active backends of the database
// (the first shard's, with -shards; but its own) and those of them waiting for the lock a notifying
// transaction takes at commit (a heavyweight lock on an object: the
// database's NOTIFY queue lock is the one such lock the engine takes).
type waitSampler struct {
	stopc          chan struct{}
	done           chan struct{}
	active, notify int
}

func (b *bench) startWaits(ctx context.Context) *waitSampler {
	w := &waitSampler{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(waitEvery)
		defer t.Stop()
		for {
			select {
			case <-w.stopc:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var active, notify int
			err := b.pool.QueryRow(ctx, `
				SELECT count(*) FILTER (WHERE state = 'active'),
				       count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock' AND wait_event = 'object')
				FROM pg_stat_activity
				WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&active, &notify)
			if err == nil {
				w.active += active
				w.notify += notify
			}
		}
	}()
	return w
}

// stop ends the sampling and returns the active backends and the waiting
// ones it counted.
func (w *waitSampler) stop() (active, notify int) {
	close(w.stopc)
	<-w.done
	return w.active, w.notify
}
