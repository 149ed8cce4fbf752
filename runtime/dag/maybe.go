package dag

// Maybe is the value of a parent that may have been skipped. A step that
// takes Maybe[T] for a parent runs whether the parent completed or was
// skipped; Ok reports which.
type Maybe[T any] struct {
	value T
	ok    bool
}

// Some returns a Maybe holding v.
func Some[T any](v T) Maybe[T] { return Maybe[T]{value: v, ok: true} }

// None returns an empty Maybe: the parent was skipped.
func None[T any]() Maybe[T] { return Maybe[T]{} }

// Get returns the value and whether the parent produced it.
func (m Maybe[T]) Get() (T, bool) { return m.value, m.ok }

// Ok reports whether the parent completed and produced a value.
func (m Maybe[T]) Ok() bool { return m.ok }

// Value returns the value, or the zero T when the parent was skipped.
func (m Maybe[T]) Value() T { return m.value }

// OrElse returns the value, or def when the parent was skipped.
func (m Maybe[T]) OrElse(def T) T {
	if m.ok {
		return m.value
	}
	return def
}
