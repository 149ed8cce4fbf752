// Package pipeline sends pgstore's sqlc queries with fewer round trips.
//
// A [Pipeline] queues the statements that return nothing and sends them
// with the next query that returns rows, in one round trip; a query whose
// arguments do not depend on the one before it can go in the same round
// trip ([Pipeline.QueryAhead]). A [Tx] is a transaction run that way: BEGIN
// goes with its first query and COMMIT with what is left.
//
// sqlc's generated methods take a dbsqlc.DBTX. On a pipeline they take its
// [Queuer] ([Pipeline.Queue]), whose Exec queues the statement rather than
// running it, and whose Query and QueryRow send the queue with their query
// and wait for the round trip.
package pipeline
