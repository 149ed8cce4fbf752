package console

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/dagenhq/dagen/runtime/store"
)

// workersPage shows the workers (alive, leader, heartbeat age,
// concurrency, the steps they serve) and the backlog per tenant and
// workflow.
func (c *Console) workersPage(w http.ResponseWriter, r *http.Request) {
	workers, err := c.st.Workers(r.Context())
	if err != nil {
		c.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	backlog, err := c.st.Backlog(r.Context())
	if err != nil {
		c.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	// One read of the descriptions of every signature any worker serves.
	alive := 0
	var sigs []string
	for _, wk := range workers {
		if wk.Alive {
			alive++
		}
		sigs = append(sigs, wk.Signatures...)
	}
	slices.Sort(sigs)
	known := map[string]store.SignatureInfo{}
	for _, si := range c.signatureInfos(r.Context(), slices.Compact(sigs), "listing workers' signatures by hash") {
		known[si.Signature] = si
	}
	views := make([]workerView, len(workers))
	for i, wk := range workers {
		views[i] = workerView{WorkerInfo: wk, Serves: serves(known, wk.Signatures)}
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

// serves groups sigs by workflow, naming their steps from the known
// descriptions; a signature without one is listed under "unknown" by its
// hash.
func serves(known map[string]store.SignatureInfo, sigs []string) []served {
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
