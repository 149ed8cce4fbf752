package console

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/dagenhq/dagen/runtime/store"
)

// workersPage shows the workers (alive, leader, heartbeat age,
// concurrency, the steps they serve) and the backlog per tenant and
// workflow.
func (c *Console) workersPage(w http.ResponseWriter, r *http.Request) {
	fl, ok := c.st.(store.Fleet)
	if !ok {
		c.fail(w, r, http.StatusNotImplemented, errors.New("this store keeps no workers (store.Fleet)"))
		return
	}
	workers, err := fl.Workers(r.Context())
	if err != nil {
		c.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	backlog, err := fl.Backlog(r.Context())
	if err != nil {
		c.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	alive := 0
	for _, wk := range workers {
		if wk.Alive {
			alive++
		}
	}
	views := make([]workerView, len(workers))
	for i, wk := range workers {
		views[i] = workerView{WorkerInfo: wk, Serves: c.serves(r.Context(), wk.Signatures)}
	}
	c.render(w, r, "workers.html", map[string]any{"Workers": views, "Alive": alive, "Backlog": backlog, "Refresh": true})
}

// workerView is a worker as the workers page shows it.
type workerView struct {
	store.WorkerInfo
	Serves []served // by workflow
}

// served is what a worker serves of one workflow: its steps, by name.
type served struct {
	Workflow string
	Steps    []string
}

// serves names the workflows and steps of signatures, from the recorded
// descriptions; a signature without one is listed under "unknown" by
// its hash.
func (c *Console) serves(ctx context.Context, sigs []string) []served {
	known := map[string]store.SignatureInfo{}
	if sr, ok := c.st.(store.SignatureReader); ok && len(sigs) > 0 {
		infos, err := sr.SignatureInfos(ctx, sigs)
		if err != nil {
			c.opts.Logger.Warn("dagen console: read signatures; listing workers' signatures by hash", "err", err)
		}
		for _, si := range infos {
			known[si.Signature] = si
		}
	}
	by := map[string][]string{}
	for _, sig := range sigs {
		if si, ok := known[sig]; ok {
			by[si.Workflow] = append(by[si.Workflow], si.Step)
		} else {
			by["unknown"] = append(by["unknown"], sig)
		}
	}
	out := make([]served, 0, len(by))
	for wf, steps := range by {
		slices.Sort(steps)
		out = append(out, served{Workflow: wf, Steps: steps})
	}
	slices.SortFunc(out, func(a, b served) int { return cmp.Compare(a.Workflow, b.Workflow) })
	return out
}
