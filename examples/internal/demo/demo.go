// Package demo holds what the examples' demo programs share: a store on
// Postgres when DATABASE_URL is set and in memory otherwise, and an engine
// started on it.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// Main runs a demo's run func with DATABASE_URL and stdout until it
// returns or the process is interrupted, and exits 1 on an error.
func Main(run func(ctx context.Context, databaseURL string, out io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Getenv("DATABASE_URL"), os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// Engine opens the demo's store (Postgres at databaseURL, migrated, or
// memory when it is empty), says which on out, and returns a new engine on
// it, not started, and a func that stops the engine (once started) and
// closes the store.
func Engine(ctx context.Context, databaseURL string, out io.Writer) (*engine.Engine, func(), error) {
	var st store.Store
	closeStore := func() {}
	if databaseURL != "" {
		pg, err := pgstore.Open(ctx, databaseURL)
		if err != nil {
			return nil, nil, err
		}
		st, closeStore = pg, pg.Close
		fmt.Fprintln(out, "store: postgres (DATABASE_URL)")
	} else {
		st = memstore.New(nil)
		fmt.Fprintln(out, "store: memory (set DATABASE_URL to use postgres)")
	}
	e, err := engine.New(st, &engine.Config{PollInterval: 10 * time.Millisecond})
	if err != nil {
		closeStore()
		return nil, nil, fmt.Errorf("new engine: %w", err)
	}
	return e, func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = e.Stop(stopCtx) // the demo's runs are finished, or it gave up: nothing left to lose
		closeStore()
	}, nil
}
