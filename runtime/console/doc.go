// Package console is dagen's web console: an http.Handler that shows runs
// and lets operators act on them. A service mounts it under a prefix,
// behind its own authentication, as it would any admin page (the package
// example serves its first page):
//
//	h, err := console.New(st, console.Options{ReadOnly: true})
//	mux.Handle("/dagen/", http.StripPrefix("/dagen", auth(h)))
//
// Options.User gives each request its User, a name and a Role: a Viewer
// sees every page and cannot act, an Operator can cancel and retry. On
// its own, as `dagen ui` serves it off the loopback address,
// Options.Auth makes the console ask who you are: a login page with
// Accounts and signed, expiring session cookies, or a trusted header
// from a reverse proxy that authenticated the user (off by default).
//
// `dagen ui` serves it against DATABASE_URL, reading from a streaming
// replica with -replica-db: over a pgstore.Replicated, with
// Options.Source, every page says whether it read the replica and how far
// behind it is, and the page after an action shows the action's effect.
//
// Pages: the runs (filters, counts per status, newest first, paging) and a
// run (its DAG drawn with each step coloured by status, each step's
// attempts, error, output and events, and the run's event log). Actions,
// unless the console is read-only: cancel a run and retry it, in the modes
// of the operator API, each behind a confirmation and a CSRF token. Every
// page refreshes itself while its runs are moving. Everything it serves is
// embedded: no build step, no network at run time.
//
// The DAG is laid out on the server, as SVG: steps in layers by their
// longest path from a root, an edge that spans layers routed through a
// placeholder in each layer between, the order within layers chosen by
// median sweeps that keep the one with the fewest crossings, and each
// step placed towards its neighbours; a mapped step is one node with its
// progress. Hovering a step lights its edges. The workers page shows the
// workers and the backlog per tenant and workflow; "why not running"
// says, for a queued step, how much of the fair queue is ahead of it.
package console
