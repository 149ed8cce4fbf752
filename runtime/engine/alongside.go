package engine

// claimAlongside claims beside the poller while there is more to claim:
// woken by each full batch the poller claims, it claims until a batch
// comes back short (or the worker's slots are taken), then waits for the
// next. Under load, the poller's claims, one at a time, were the pace of
// the worker: the claim statements ran two thirds of the single_step
// benchmark's time, and a tenth of its two cores stayed idle (1.74-1.80
// busy, 1.84-1.88 with two claims under way, one read and dispatched
// while the other runs). An idle worker polls as before, once a poll
// interval: only a full batch wakes this claimer. Claims take their slots
// under the loop's slot lock (see take), so the two never claim the same
// free slots, and the store's claims skip each other's rows.
func (e *Engine) claimAlongside(l *loop) {
	for {
		select {
		case <-l.stopPoll:
			return
		case <-l.alongside:
		}
		for {
			select {
			case <-l.stopPoll:
				return
			default:
			}
			// A failure is the poller's to report and retry: it claims next.
			if full, err := e.claim(l); err != nil || !full {
				break
			}
		}
	}
}
