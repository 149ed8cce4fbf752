// Package maintenance keeps pgstore's schema fit for the work, off the
// engine's path: one service a file.
//
//   - [Partitions] (partitions.go) makes the ranges of run ids the
//     history tables are partitioned by ahead of the work, drops old ones
//     whole, and gives one to a creation whose run id has none.
//   - [Stats] (stats.go) analyzes the hot tables, and the ranges new runs
//     go to, as they grow, so that the generic plans Postgres keeps stay
//     right for their sizes.
//   - [Vacuum] (vacuum.go) vacuums the queue tables by volume, and on the
//     leader's rounds where autovacuum is off.
//
// The services that work in the background, Stats and Vacuum, are started
// and stopped alike: Note counts the tasks the store queued and starts a
// run when enough were (job.go), and Wait, which the store's Close calls,
// waits for the run under way. Partitions works when the leader calls it,
// and when a creation needs a range.
package maintenance
