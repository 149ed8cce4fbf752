// Package memstore is the in-memory [store.Store]: the embedded default and
// the fast backend for tests.
//
// It mirrors the Postgres design rather than shortcutting it: values cross
// it as encoded bytes, the ready queue is ordered by block-based fair ids
// (one group id and block pointer per tenant, a monotonic consumption
// frontier), fan-in counts pending parents down under one lock so exactly
// one completion enqueues a child, every change to a running task is fenced
// on its attempt's claim token (random, as pgstore's), and sleeps and retry delays are absolute wake times on an
// injectable clock. Nothing survives the process; use pgstore for that.
package memstore
