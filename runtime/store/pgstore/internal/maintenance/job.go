package maintenance

import (
	"context"
	"sync"
)

// countedJob runs a job in the background once every units have been
// noted since it last ran: the refresh of the planner's statistics (Stats)
// and the vacuum of the queue (Vacuum), which a caller's batch should not
// wait for.
// One run is under way at a time; units noted during it make it run again
// when it is done. A role that may not do the job (insufficient_privilege)
// turns it off for good; any other failure is left to the next run.
type countedJob struct {
	every int // units between two runs

	mu      sync.Mutex
	noted   int  // units noted since the last run began
	running bool // a run is under way
	off     bool // not permitted: stop trying

	wg sync.WaitGroup // the run under way, for the store's Close
}

// note records n units and, when enough were noted and no run is under
// way, starts run in the background with ctx's values but not its
// cancellation (the caller's call ends first).
func (j *countedJob) note(ctx context.Context, n int, run func(context.Context) error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.noted += n
	if j.off || j.running || j.noted < j.every {
		return
	}
	j.running = true
	j.wg.Add(1)
	go j.loop(context.WithoutCancel(ctx), run)
}

// loop calls run until fewer than every units were noted since it began.
func (j *countedJob) loop(ctx context.Context, run func(context.Context) error) {
	defer j.wg.Done()
	j.mu.Lock()
	defer j.mu.Unlock()
	for !j.off && j.noted >= j.every {
		j.noted = 0
		j.mu.Unlock()
		err := run(ctx)
		j.mu.Lock()
		if isInsufficientPrivilege(err) {
			j.off = true
		}
	}
	j.running = false
}

// wait waits for the run under way, if any.
func (j *countedJob) wait() { j.wg.Wait() }
