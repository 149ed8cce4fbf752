package engine

import (
	"errors"
	"fmt"

	"github.com/dagenhq/dagen/internal/textfmt"
	"github.com/dagenhq/dagen/runtime/dag"
)

// DefaultMaxPayload is the default of Config.MaxPayload: 16 MiB.
const DefaultMaxPayload = 16 << 20

// ErrPayloadTooLarge is returned (wrapped) for a run input or a signal
// payload whose encoding exceeds Config.MaxPayload, and fails for good a
// step whose output does.
var ErrPayloadTooLarge = errors.New("payload too large")

// checkPayload fails when b, the encoding of what (a run's input, a step's
// output, a signal's payload), is larger than the configured cap.
func (e *Engine) checkPayload(what string, b []byte) error {
	if e.cfg.MaxPayload < 0 || len(b) <= e.cfg.MaxPayload {
		return nil
	}
	return fmt.Errorf("%w: %s encodes to %s, over the cap of %s; keep large data elsewhere (an object store) and pass its key, or raise Config.MaxPayload",
		ErrPayloadTooLarge, what, byteSize(len(b)), byteSize(e.cfg.MaxPayload))
}

// encodePayload encodes v, a run's input (what says which), and checks
// its size.
func (e *Engine) encodePayload(what string, v any) ([]byte, error) {
	b, err := encodeInput(v)
	if err != nil {
		return nil, err
	}
	if err := e.checkPayload(what, b); err != nil {
		return nil, err
	}
	return b, nil
}

// checkOutput is checkPayload for a step's output: an output over the cap
// fails the step for good, since running it again makes it again, and
// nothing of it is stored.
func (e *Engine) checkOutput(step string, out []byte) error {
	if err := e.checkPayload("the output of step "+step, out); err != nil {
		return dag.Terminal(err)
	}
	return nil
}

// byteSize writes n bytes for people: exactly below a MiB (1,026
// bytes), in MiB above (20.0 MiB).
func byteSize(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return textfmt.Count(n, "byte")
}
