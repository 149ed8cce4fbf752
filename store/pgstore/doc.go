// Package pgstore is the Postgres implementation of [store.Store].
//
// Every query it runs lives in the repository's queries/ directory and is
// compiled by sqlc into internal/dbsqlc; the schema lives in migrations/
// and is applied by [Migrate] (or [Open], which connects and migrates).
//
// The hot path is batched. [Store.ClaimTasks] is one statement: it takes
// the first rows of the fair ready queue with FOR UPDATE SKIP LOCKED,
// deletes them, starts the tasks and returns what the steps need.
// [Store.CompleteTasks] applies a batch of results in one transaction with
// array parameters expanded by unnest.
//
// Writers other than a claim lock the runs they touch first, in run id
// order; that single rule serializes the changes to one run (so a fan-in
// child is enqueued exactly once and a run finishes exactly once) and keeps
// concurrent transactions from deadlocking. A claim never locks a run: it
// locks a queue row, then its QUEUED task, then the frontier row; whoever
// removes queue rows (a failing or cancelled run) does so before it touches
// the run's queued tasks.
//
// Time comes from the database clock (now()) unless [Config.Now] is set, in
// which case every query uses that clock instead, so tests can drive time.
package pgstore
