package engine

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// DefaultMaxElements is Config.MaxElements' default: the most elements a
// mapped step may have in one run.
const DefaultMaxElements = 100_000

// mapStep maps a mapped step whose cascade and predicates said to run it:
// the parent it maps holds a JSON array, and each of its elements becomes
// an element task (store.OutcomeMapped). An empty array (or null, a nil
// slice) completes the step at once with an empty array.
func (e *Engine) mapStep(step *Step, in StepInput, res store.TaskResult) (store.TaskResult, bool) {
	p, err := in.parent(step.Each)
	if err == nil && p.Status != store.TaskCompleted {
		err = dag.Terminal(fmt.Errorf("parent %s of mapped step %s is %s, not COMPLETED", p.Step, step.Name, p.Status))
	}
	var elems [][]byte
	if err == nil {
		elems, err = splitArray(p.Output, step.Each)
	}
	if err == nil && len(elems) > e.cfg.MaxElements {
		err = tooManyElements(step.Each, step.Name, len(elems), e.cfg.MaxElements)
	}
	if err != nil {
		res.Outcome, res.Error = store.OutcomeFailed, err.Error()
		return res, true
	}
	if len(elems) == 0 {
		res.Outcome, res.Output = store.OutcomeCompleted, []byte("[]")
		return res, true
	}
	res.Outcome, res.Each, res.Limit = store.OutcomeMapped, step.Each, step.Limit
	res.Elements = elems
	return res, true
}

// checkMappable fails a step's output that a mapped step of the same
// workflow maps when it is not an array of at most Config.MaxElements
// elements: the step that returned it is the one to fail, at once, rather
// than the mapped step later.
func (e *Engine) checkMappable(reg *registered, step *Step, out []byte) error {
	mappers := reg.mappedBy[step.Name]
	if len(mappers) == 0 {
		return nil
	}
	n, err := countArray(out, step.Name)
	if err != nil {
		return err
	}
	if n > e.cfg.MaxElements {
		return tooManyElements(step.Name, mappers[0], n, e.cfg.MaxElements)
	}
	return nil
}

func tooManyElements(parent, mapper string, n, limit int) error {
	return dag.Terminal(fmt.Errorf("%s returned %d elements for %s to map, more than the engine's element cap of %d (engine.Config.MaxElements): split the work or raise the cap", parent, n, mapper, limit))
}

// splitArray splits an encoded slice into its encoded elements, which
// share b's memory; null (a nil slice) has none.
func splitArray(b []byte, what string) ([][]byte, error) {
	var elems [][]byte
	err := walkArray(b, what, func(el []byte) { elems = append(elems, el) })
	return elems, err
}

// walkArray calls f with each encoded element of an encoded slice, a
// subslice of b, in order. null (a nil slice) has none.
func walkArray(b []byte, what string, f func(el []byte)) error {
	bad := func(err error) error {
		return dag.Terminal(fmt.Errorf("output of %s is not a slice to map: %w", what, err))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return bad(err)
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return bad(fmt.Errorf("it starts with %v", tok))
	}
	var skip json.RawMessage // reused: its buffer is not kept
	for dec.More() {
		start := dec.InputOffset()
		if err := dec.Decode(&skip); err != nil {
			return bad(err)
		}
		f(bytes.TrimLeft(b[start:dec.InputOffset()], ", \t\r\n"))
	}
	if _, err := dec.Token(); err != nil {
		return bad(err)
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return bad(fmt.Errorf("%d bytes after the slice", len(rest)))
	}
	return nil
}

// countArray counts the elements of an encoded slice.
func countArray(b []byte, what string) (int, error) {
	n := 0
	err := walkArray(b, what, func([]byte) { n++ })
	return n, err
}
