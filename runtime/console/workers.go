package console

import (
	"errors"
	"net/http"

	"github.com/dagenhq/dagen/runtime/store"
)

// workersPage shows the workers (alive, leader, heartbeat age, the
// signatures they serve) and the backlog per tenant and workflow.
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
	c.render(w, r, "workers.html", map[string]any{"Workers": workers, "Alive": alive, "Backlog": backlog, "Refresh": true})
}
