package store

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ElementName is the stored name of element i of mapped step step:
// "Resize[3]". Step names cannot contain '[', so it names no step.
func ElementName(step string, i int) string {
	return step + "[" + strconv.Itoa(i) + "]"
}

// ParseElement splits an element's stored name into its mapped step and
// index; ok is false for a name that is not an element's.
func ParseElement(name string) (step string, i int, ok bool) {
	open := strings.IndexByte(name, '[')
	if open <= 0 || !strings.HasSuffix(name, "]") {
		return "", 0, false
	}
	i, err := strconv.Atoi(name[open+1 : len(name)-1])
	if err != nil || i < 0 || name[open+1:len(name)-1] != strconv.Itoa(i) {
		return "", 0, false
	}
	return name[:open], i, true
}

// AdmitElements returns how many more elements of a mapped task to queue:
// of total elements, next are queued already and pending are unresolved,
// and at most limit (0: no bound) may be in flight (queued, running or
// backing off) at once.
func AdmitElements(next, total, pending, limit int) int {
	n := total - next
	if limit > 0 {
		inFlight := next - (total - pending)
		n = min(n, limit-inFlight)
	}
	return max(n, 0)
}

// CollectOutputs is the output of a mapped task whose elements produced
// outputs, in element order: their JSON array (values are JSON: see
// engine.Encode). An element without output is null in it; when no element
// has one (a step that returns only an error), the mapped task has none
// either, and the result is nil.
func CollectOutputs(outputs [][]byte) []byte {
	size, some := 2, false
	for _, o := range outputs {
		size += len(o) + 5
		some = some || o != nil
	}
	if !some && len(outputs) > 0 {
		return nil
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteByte('[')
	for i, o := range outputs {
		if i > 0 {
			b.WriteByte(',')
		}
		if o == nil {
			b.WriteString("null")
			continue
		}
		b.Write(o)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// MappedDetail is the detail of a mapped task's MAPPED event.
func MappedDetail(n, limit int) string {
	if limit > 0 && limit < n {
		return fmt.Sprintf("%d elements, %d at a time", n, limit)
	}
	return fmt.Sprintf("%d elements", n)
}
