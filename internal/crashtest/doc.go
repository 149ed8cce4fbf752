// Package crashtest proves that nothing is lost and nothing runs twice for
// good when worker processes are killed: real OS processes run a generated
// workflow against one Postgres database while the test SIGKILLs and
// restarts them, then the test audits the store and an execution log.
package crashtest
