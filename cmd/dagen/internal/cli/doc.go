// Package cli is the dagen command: argument parsing, exit codes and
// output. It is a thin layer over package gen, which does the work (and,
// for dagen migrate, over pgstore's migrations; for dagen runs, schedules,
// tenants and ui, over the store and the console), so that the command can
// be tested without building a binary.
package cli
