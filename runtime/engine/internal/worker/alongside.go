package worker

// claimAlongside claims beside the poller while there is more to claim:
// woken by each full batch the poller claims, it claims until a batch
// comes back short (or the worker's slots are taken), then waits for the
// next. Under load, the poller's claims, one at a time, were the pace of
// the worker: claim statements took most of its time, and cores stayed
// idle while the one claim under way waited on the database; with two
// under way, one is read and dispatched while the other runs (see
// docs/performance.md, "Claiming alongside the poller"). An idle worker
// polls as before, once a poll interval: only a full batch wakes this
// claimer. Claims take their slots under the loop's slot lock (see take),
// so the two never claim the same free slots, and the store's claims skip
// each other's rows.
func (w *Worker) claimAlongside() {
	for {
		select {
		case <-w.stopPoll:
			return
		case <-w.alongside:
		}
		for {
			select {
			case <-w.stopPoll:
				return
			default:
			}
			// A failure is the poller's to report and retry: it claims next.
			if _, full, err := w.claim(); err != nil || !full {
				break
			}
		}
	}
}
