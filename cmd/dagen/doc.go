// Command dagen checks the //dag: directives of Go packages and writes the
// typed workflow wiring, dag_gen.go, next to them.
//
// Add it to a module as a tool, once:
//
//	go get -tool github.com/dagenhq/dagen/cmd/dagen
//
// and run it from go generate:
//
//	//go:generate go tool dagen
//
// or by hand with package patterns; see dagen --help. dagen migrate up and
// dagen migrate status apply and report the Postgres store's schema
// migrations; dagen runs, dagen schedules and dagen tenants list and act
// on a store's runs, schedules and tenant weights, and dagen ui serves the
// web console. All the logic lives in package cli.
package main
