// Package groupcommit makes concurrent creations of runs share a
// transaction (group commit), so that triggers of one tenant do not take
// turns at the lock of the tenant's row of the fair queue, one
// transaction each.
//
// A [Group] writes a call at once when nothing is being written, and the
// calls made meanwhile together next; each call still creates all of its
// runs or none, and keeps its context. It knows nothing of SQL: the
// store hands it the function that creates runs in one transaction
// ([CreateFunc]), and asks [Groupable] which calls may share one.
package groupcommit
