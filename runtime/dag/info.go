package dag

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// RunID identifies a workflow run. It is a 16-byte UUID (version 7: time
// ordered), stored as uuid in Postgres.
type RunID [16]byte

// NewRunID returns a new time-ordered UUIDv7 run id. Ids made by one
// process are strictly increasing: within a millisecond, the 12 bits after
// the version count up from a random start (RFC 9562, section 6.2, method
// 1), and the millisecond moves on when they run out. Concurrency caps
// admit runs in id order, so a process's runs are admitted in the order
// it triggered them.
func NewRunID() RunID {
	var id RunID
	_, _ = rand.Read(id[:]) // crypto/rand.Read never returns an error
	ms, seq := idClock.next(uint64(time.Now().UnixMilli()), uint16(id[6])<<8|uint16(id[7]))
	id[0], id[1], id[2] = byte(ms>>40), byte(ms>>32), byte(ms>>24)
	id[3], id[4], id[5] = byte(ms>>16), byte(ms>>8), byte(ms)
	id[6], id[7] = 0x70|byte(seq>>8), byte(seq) // version 7, then the counter
	id[8] = id[8]&0x3f | 0x80                   // RFC 4122 variant
	return id
}

// MaxRunIDShard is the largest shard NewRunIDIn writes into an id: 14
// bits of the random part, the 6 after the variant and the next 8.
const MaxRunIDShard = 1<<14 - 1

// NewRunIDIn returns a new run id as NewRunID does, with shard (at most
// MaxRunIDShard; higher bits are dropped) written into the 14 random bits
// that follow the variant (bytes 8 and 9), where [RunID.Shard] reads it.
// The time and the counter are untouched, so ids stay time ordered and
// unique; 48 random bits remain. A sharded store finds a run's shard from
// its id this way, without asking every shard.
func NewRunIDIn(shard uint16) RunID {
	id := NewRunID()
	id[8] = 0x80 | byte(shard>>8)&0x3f // keep the RFC 4122 variant
	id[9] = byte(shard)
	return id
}

// Shard returns the 14 bits NewRunIDIn wrote into the id. An id made
// otherwise (NewRunID, another system) has random bits there: a reader
// that finds no run where they point must look elsewhere.
func (id RunID) Shard() uint16 { return uint16(id[8]&0x3f)<<8 | uint16(id[9]) }

// idClock is the last millisecond and counter NewRunID used: the one
// state this package keeps, so that ids never go backwards.
var idClock monotonic

type monotonic struct {
	mu  sync.Mutex
	ms  uint64
	seq uint16 // 12 bits
}

// next returns the millisecond and counter of a new id: now with a random
// start of the counter (below half its range, so it has room to count)
// when now is past the last millisecond, or else the last ones counted on.
func (m *monotonic) next(now uint64, random uint16) (uint64, uint16) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case now > m.ms:
		m.ms, m.seq = now, random&0x7ff
	case m.seq < 0xfff:
		m.seq++
	default:
		m.ms, m.seq = m.ms+1, random&0x7ff
	}
	return m.ms, m.seq
}

// String returns the canonical 8-4-4-4-12 form.
func (id RunID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:], id[10:])
	return string(b[:])
}

// IsZero reports whether id is the zero id.
func (id RunID) IsZero() bool { return id == RunID{} }

// MarshalText encodes the id in its canonical form.
func (id RunID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the canonical form.
func (id *RunID) UnmarshalText(b []byte) error {
	parsed, err := ParseRunID(string(b))
	if err != nil {
		return err
	}
	*id = parsed
	return nil
}

// ErrBadRunID is returned by [ParseRunID] for text that is not a UUID.
var ErrBadRunID = errors.New("dag: malformed run id")

// ParseRunID parses the canonical 8-4-4-4-12 form of a run id.
func ParseRunID(s string) (RunID, error) {
	var id RunID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, fmt.Errorf("%w: %q", ErrBadRunID, s)
	}
	hexPart := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(id[:], []byte(hexPart)); err != nil {
		return RunID{}, fmt.Errorf("%w: %q", ErrBadRunID, s)
	}
	return id, nil
}

// StepInfo tells a running step where it is: which run, tenant and
// attempt. The engine puts it in every step's context.
type StepInfo struct {
	RunID    RunID
	Workflow string // stored workflow name
	Step     string // stored step name
	Tenant   string
	Attempt  int // 1 for the first attempt
	// Mapped is set for a mapped step (each=), which runs once per
	// element; Element is then the index of the element this call runs
	// for.
	Mapped  bool
	Element int
}

// IdempotencyKey is stable across the attempts of one step in one run (of
// one element of a mapped step): use it to make side effects (charges,
// emails) happen once even though steps are delivered at least once.
func (s StepInfo) IdempotencyKey() string {
	if s.Mapped {
		return s.RunID.String() + "/" + s.Step + "[" + strconv.Itoa(s.Element) + "]"
	}
	return s.RunID.String() + "/" + s.Step
}

type stepInfoKey struct{}

// WithInfo returns a context carrying info. The engine calls it for every
// step; tests of step functions can call it too.
func WithInfo(ctx context.Context, info StepInfo) context.Context {
	return context.WithValue(ctx, stepInfoKey{}, info)
}

// Info returns the step information in ctx, and false outside a step.
func Info(ctx context.Context) (StepInfo, bool) {
	info, ok := ctx.Value(stepInfoKey{}).(StepInfo)
	return info, ok
}
