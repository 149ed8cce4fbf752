// Package expense is an approval flow and a nightly report: an expense
// waits, durably and holding no worker, for a manager's typed Approval
// signal (//dag:signal), and a schedule (//dag:schedule) starts the
// Report workflow every night at 03:00 Paris time.
//
// `make demo` runs it (cmd: examples/expense/demo).
package expense
