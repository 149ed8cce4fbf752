// Package leasebook keeps, in memory, what a store must remember of the
// attempts its claims started until they are answered: their leases, to
// delete once every attempt of a claim was answered, and the claims' views
// of the tasks' rows, to decide completions on. One type, [Book], owns
// both; it runs no SQL (the store writes and deletes the leases).
package leasebook
