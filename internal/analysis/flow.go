package analysis

import "slices"

// Flow control of a workflow's runs: concurrency=N on //dag:workflow
// admits at most N runs RUNNING at once, per=Path counts them per value
// of a field of the input (the concurrency key, read like key=, see
// [fieldKey]) rather than all together, and timeout=D fails a run that has
// not finished D after its trigger. The engine enforces them
// (engine.Definition.Concurrency, ConcurrencyKey and Timeout).

// readFlow reads concurrency=, per= and timeout= of a workflow: the form of
// their values, the path of per=, and per= without concurrency=.
func (a *analyzer) readFlow(f *found, w *Workflow) {
	hasConcurrency := slices.ContainsFunc(f.dir.Args, func(ar arg) bool { return ar.Key == "concurrency" })
	w.Concurrency = a.readCount(f, "concurrency", "runs", "1", "no cap")
	w.ConcurrencyKey = a.readFieldKey(f, w, concurrencyKey)
	if ar, ok := f.args["per"]; ok && !hasConcurrency {
		a.errorf(ar.KeyPos, ar.End, PerWithoutConcurrency,
			"per=%[1]s needs concurrency=: per= only says which runs one cap counts together; write concurrency=1 per=%[1]s for one run at a time per %[1]s, or drop per=",
			ar.Value)
	}
	a.readDuration(f, "timeout", "48h", "no deadline", &w.Timeout)
}
