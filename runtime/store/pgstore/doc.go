// Package pgstore is the Postgres implementation of [store.Store]: the
// store a service's workers share, durable across restarts and deploys.
// [Open] connects and migrates, and is all most programs need (see the
// example of Open; the example of New is a worker on a pool of its own,
// and the example of Status.Err, which runs without a database, shows
// what a store says of a schema it cannot use). The schema's version is
// checked when a store is made: migrate with [Migrate] or "dagen migrate
// up" before starting workers of a new dagen.
//
// [Replicated] is the store for operators that have a streaming replica:
// it reads from the replica and acts on the primary, and the reads after an
// action wait for the replica to replay it.
//
// Every query it runs lives in the repository's queries/ directory and is
// compiled by sqlc into internal/dbsqlc; the schema lives in migrations/
// and is applied by [Migrate] (or [Open], which connects and migrates).
//
// The package maps the store's interface onto those queries; its machinery
// lives in internal packages of one job each, so that a change to one
// touches one: internal/pipeline sends the statements with fewer round
// trips (and runs the pipelined transaction), internal/groupcommit makes
// concurrent creations share a transaction, internal/leasebook keeps the
// leases and claim views of this store's claims until answered, and
// internal/maintenance keeps the schema fit for the work (the history
// tables' ranges, the planner's statistics, the queue tables' vacuum).
//
// The hot path is batched. [Store.ClaimTasks] is one statement: it takes
// the first rows of the fair ready queue with FOR UPDATE SKIP LOCKED,
// deletes them, starts the tasks and returns what the steps need.
// [Store.CompleteTasks] applies a batch of results in one transaction with
// array parameters expanded by unnest, every key found by its own index
// lookup whatever the batch size. Its statements are pipelined: BEGIN goes
// with the run locks and the task reads, the writes with COMMIT, so a batch
// of leaf tasks takes two round trips. [Store.CreateRuns] is a single round
// trip, and so are [Store.StartRuns], which writes the roots the fair
// queue would hand out next as RUNNING with their leases instead of
// enqueuing them, and [Store.ReadRun]. [Store.CreateRunsTx] and
// [Store.SendSignalTx] do the work of a creation and of a signal in the
// caller's own pgx.Tx, under a savepoint, so that it commits or rolls back
// with the caller's writes.
//
// What a batch does to its runs and tasks is decided by the transition
// core that memstore uses too (runtime/store/internal/transition): pgstore
// loads the rows a batch needs, lets the core decide, and writes the
// decision; the core's order is the order of the events it logs.
//
// A completed result of an attempt this store claimed is decided on what
// its claim returned of the task's row (a claim view: its children, its
// STARTED event id, its claim token, where the row is), not on the row
// read again. The transaction writes such a task only where the row is
// still RUNNING under that claim, and fails otherwise (migration 013); the
// batch is then decided again on the rows it reads, so a view never writes
// what a read row would not have.
//
// Every write of an attempt is fenced by its claim's token (migration
// 014), drawn at random by the claim statement, not by the attempt number
// or an id from a sequence: a standby promoted behind its primary hands
// those out again, and a worker's late result from the lost history must
// not pass for the new claim's. Leases, whose ids come from the event
// sequence, are deleted by id and token for the same reason.
//
// Calls of [Store.CreateRuns] or [Store.StartRuns] made at once share a
// transaction (group commit): an enqueue locks its tenants' rows of the
// fair queue until it commits, so concurrent triggers of one tenant, each
// in a transaction of its own, would take turns at that lock. A call made
// while nothing is being written goes at once; those made meanwhile go
// together next. Each call still creates all of its runs or none, and a
// batch starts one run an idempotency key, as one call does.
//
// The event log is dagen_events plus the events a task row keeps: the
// QUEUED, STARTED and COMPLETED events of its current round are stamped on
// the row the transition writes anyway (with an id from the log's sequence,
// so the merged log keeps its order), and written out to dagen_events when
// a retry, rescue or release starts a new round. A batch inserts its other
// events (SKIPPED, WOKEN, FAILED, …) before it counts children down, so a
// child's QUEUED, stamped on its row then, comes after the events of the
// parents that made it ready (see [store.Store]'s ListEvents).
//
// A running task's lease is not a column of the task: dagen_tasks has no
// index but its primary key, so the updates a task goes through are HOT and
// write no index entries. Each claim writes one row of dagen_leases for all
// of its tasks instead (migration 012), which the claiming store deletes
// once it has committed an answer for each of them, and the leader once it
// expires and no task holds it (see RescueExpired).
//
// Prepared statements may keep generic plans made while the tables were
// small; the store analyzes its tables each time the tasks table or the
// ready queue doubles, which also has them planned again.
//
// Writers other than a claim lock the runs they touch first, in run id
// order; that single rule serializes the changes to one run (so a fan-in
// child is enqueued exactly once and a run finishes exactly once) and keeps
// concurrent transactions from deadlocking. A claim never locks a run: it
// locks a queue row, then its QUEUED task, then the frontier row; whoever
// removes queue rows (a failing or cancelled run) does so before it touches
// the run's queued tasks.
//
// Notifications go through LISTEN/NOTIFY on two channels per schema: one
// that transactions enqueuing work notify ([Store.Subscribe]), one that
// [Store.CancelRun] notifies with the run's id ([Store.SubscribeCancels]).
// A store listens to both on one connection while any subscription
// lasts: one to [Config.SessionURL], or one taken out of the pool when the
// pool reaches Postgres itself; behind a transaction pooler without a
// session URL it does not listen ([ErrNoSession]) and workers poll.
//
// Leadership ([Store.Lead]) is a lease in dagen_leader with a term, not a
// session's lock, so that it works through a transaction pooler and
// survives a failover; the leader's duties that change state check the
// lease in their own transaction.
//
// Time comes from the database clock (now()) unless [Config.Now] is set, in
// which case every query uses that clock instead, so tests can drive time.
package pgstore
