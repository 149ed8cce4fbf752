package pipeline

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// A Pipeline runs sqlc queries with fewer round trips.
// Statements without results are queued (QueueSQL, or Exec of the Queuer
// that Queue returns), not sent; a query (Query, QueryRow) is sent together
// with everything queued before it, in one round trip, and so is the rest
// by Send. Statements run in the order they were queued; the error of a
// queued statement surfaces at the next round trip, named after the
// statement.
//
// A query whose arguments are known before the result of the one before it
// can go with it (QueryAhead): its rows are then read, without another
// round trip, by the next Query with the same SQL and arguments.
//
// Over a transaction the statements run in it. Over a pool, what one round
// trip carries runs in one implicit transaction: all of it or none.
type Pipeline struct {
	db    DB
	batch *pgx.Batch  // a new one for each send: the results read it as they come
	ahead []Statement // queries to send after the next query
	open  *openBatch  // a sent batch with results of queries sent ahead still to read
	sent  bool        // a round trip was made (Sent)
}

// openBatch is a sent batch whose remaining results belong to queries sent
// ahead, in order.
type openBatch struct {
	br   pgx.BatchResults
	left []Statement
}

// DB is what a Pipeline runs on: a pgx.Tx, a *pgxpool.Pool or a
// *pgxpool.Conn.
type DB interface {
	dbsqlc.DBTX
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}

// New returns a pipeline over db.
func New(db DB) *Pipeline { return &Pipeline{db: db} }

// QueueSQL queues sql, a statement without results: it is sent with the
// next round trip (Send, or a query), not now, and its error surfaces
// there.
func (p *Pipeline) QueueSQL(sql string, args ...any) {
	if p.batch == nil {
		p.batch = &pgx.Batch{}
	}
	p.batch.Queue(sql, args...)
}

// Queue returns the Queuer through which sqlc's queries run on p: the
// statements of :exec queries are queued, the others send the queue.
func (p *Pipeline) Queue() Queuer { return Queuer{p} }

// A Queuer is the dbsqlc.DBTX that sqlc's queries take to run on a
// Pipeline. Its Exec does not execute: it queues the statement
// (Pipeline.QueueSQL), whose command tag and error are not known yet.
// Its Query and QueryRow are the pipeline's: they send the queue with
// their query and wait for the round trip, unless the query's rows were
// sent ahead.
type Queuer struct{ p *Pipeline }

var _ dbsqlc.DBTX = Queuer{}

// Exec queues sql (Pipeline.QueueSQL). It returns an empty command tag
// and no error: the statement has not run yet.
func (q Queuer) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	q.p.QueueSQL(sql, args...)
	return pgconn.CommandTag{}, nil
}

// Query is Pipeline.Query: it waits for a round trip that carries the
// queue, unless sql's rows were sent ahead.
func (q Queuer) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return q.p.Query(ctx, sql, args...)
}

// QueryRow is Pipeline.QueryRow: it waits for a round trip that carries
// the queue, unless sql's row was sent ahead.
func (q Queuer) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return q.p.QueryRow(ctx, sql, args...)
}

// QueryAhead sends q with the next query, whose result it does not depend
// on. The next Query or QueryRow after that must be q, with the same
// arguments, to read its rows; anything else discards them.
func (p *Pipeline) QueryAhead(q Statement) {
	p.ahead = append(p.ahead, q)
}

// Query returns sql's rows. When sql, with args, is the next query sent
// ahead, it reads its rows, with no round trip. Otherwise it waits for one:
// it sends the queued statements, sql and the queries to send ahead, in
// that order (sql alone when there are none).
func (p *Pipeline) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if rows, ok, err := p.takeAhead(sql, args); ok || err != nil {
		return rows, err
	}
	if p.batch == nil && len(p.ahead) == 0 && argBytes(args) < largeArgs {
		p.sent = true
		return p.db.Query(ctx, sql, args...)
	}
	br, err := p.sendQueued(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		p.open = nil
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br, p: p}, nil
}

// takeAhead returns the rows of the next query sent ahead if it is sql
// with args. Otherwise the results sent ahead are discarded.
func (p *Pipeline) takeAhead(sql string, args []any) (pgx.Rows, bool, error) {
	o := p.open
	if o == nil {
		return nil, false, nil
	}
	if len(o.left) == 0 || o.left[0].sql != sql || !reflect.DeepEqual(o.left[0].args, args) {
		return nil, false, p.DiscardAhead()
	}
	o.left = o.left[1:]
	rows, err := o.br.Query()
	if err != nil {
		p.open = nil
		_ = o.br.Close()
		return nil, true, err
	}
	return &batchRows{Rows: rows, br: o.br, p: p}, true, nil
}

// DiscardAhead discards the unread results of queries sent ahead, and
// returns the error of the batch that carried them. A caller that stops
// reading before the queries it sent ahead calls it, so that the
// connection is free for what comes next.
func (p *Pipeline) DiscardAhead() error {
	o := p.open
	if o == nil {
		return nil
	}
	p.open = nil
	if err := o.br.Close(); err != nil {
		if len(o.left) == 0 {
			return fmt.Errorf("query sent ahead: %w", err)
		}
		return fmt.Errorf("%s (sent ahead, not read): %w", statementName(o.left[0].sql), err)
	}
	return nil
}

// QueryRow returns sql's row. When sql, with args, is the next query sent
// ahead, it reads its row, with no round trip. Otherwise it waits for one,
// as Query does.
func (p *Pipeline) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if rows, ok, err := p.takeAhead(sql, args); ok || err != nil {
		if err != nil {
			return errRow{err}
		}
		return firstRow{rows}
	}
	if p.batch == nil && len(p.ahead) == 0 && argBytes(args) < largeArgs {
		p.sent = true
		return p.db.QueryRow(ctx, sql, args...)
	}
	br, err := p.sendQueued(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br, p: p}
}

// Send sends the queued statements and waits for them: a round trip, when
// any are queued. The unread results of queries sent ahead are discarded
// first.
func (p *Pipeline) Send(ctx context.Context) error {
	if err := p.DiscardAhead(); err != nil {
		return err
	}
	if p.batch == nil {
		return nil
	}
	br, err := p.sendQueued(ctx, "", nil)
	if err != nil {
		return err
	}
	return br.Close()
}

// Sent reports whether p made a round trip: whether anything queued or
// queried may have reached the database.
func (p *Pipeline) Sent() bool { return p.sent }

// sendQueued sends the queued statements, then sql unless it is empty and
// the queries to send ahead, and reads the results of the queued ones. The
// caller reads sql's result; the batch stays open for the queries sent
// ahead, if any, and is closed with the last result read.
func (p *Pipeline) sendQueued(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	if err := p.DiscardAhead(); err != nil {
		return nil, err
	}
	var ahead []Statement
	if sql != "" {
		ahead, p.ahead = p.ahead, nil
	}
	b := p.batch
	if b == nil {
		b = &pgx.Batch{}
	}
	p.batch = nil
	queued := b.QueuedQueries
	if sql != "" {
		b.Queue(sql, args...)
		for _, q := range ahead {
			b.Queue(q.sql, q.args...)
		}
	}
	if carriesLargeArgs(b.QueuedQueries) {
		b.Queue(releaseSQL, releaseArgs...)
	}
	p.sent = true
	br := p.db.SendBatch(ctx, b)
	for _, q := range queued {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, fmt.Errorf("%s: %w", statementName(q.SQL), err)
		}
	}
	if sql != "" && len(ahead) > 0 {
		p.open = &openBatch{br: br, left: ahead}
	}
	return br, nil
}

// statementName is the sqlc name of a query ("-- name: UpdateTasks :exec"),
// or the first word of any other statement ("commit").
func statementName(sql string) string {
	first, _, _ := strings.Cut(sql, "\n")
	if name, ok := strings.CutPrefix(first, "-- name: "); ok {
		name, _, _ = strings.Cut(name, " ")
		return name
	}
	if word, _, _ := strings.Cut(strings.TrimSpace(first), " "); word != "" {
		return word
	}
	return "statement"
}

// batchRows closes the batch with the rows, unless results of queries
// sent ahead are still to be read from it.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
	p  *Pipeline
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.p.readsOn(r.br, true) {
		return
	}
	_ = r.br.Close() // the rows were the batch's last result: their Err reports failures
}

// readsOn reports whether br stays open after a result of it was read:
// when that result was read whole (ok) and queries sent ahead are left to
// read from it. Otherwise br is done with, and no longer open.
func (p *Pipeline) readsOn(br pgx.BatchResults, ok bool) bool {
	o := p.open
	if o == nil || o.br != br {
		return false
	}
	if ok && len(o.left) > 0 {
		return true // the next query sent ahead reads on
	}
	p.open = nil
	return false
}

// batchRow closes the batch once the row is scanned, unless results of
// queries sent ahead are still to be read from it and the row was read.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
	p   *Pipeline
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if r.p.readsOn(r.br, err == nil) {
		return nil
	}
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// firstRow is the row of a query sent ahead, read as QueryRow reads one:
// its first row, or pgx.ErrNoRows.
type firstRow struct{ rows pgx.Rows }

func (r firstRow) Scan(dest ...any) error {
	var err error
	if r.rows.Next() {
		err = r.rows.Scan(dest...)
	} else {
		err = pgx.ErrNoRows
	}
	r.rows.Close()
	if rerr := r.rows.Err(); rerr != nil {
		return rerr
	}
	return err
}

// errRow is a row that failed before it was read.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// A Statement is a query as a sqlc method would send it (Record), to be
// sent ahead (QueryAhead).
type Statement struct {
	sql  string
	args []any
}

// Record returns the query that fn sends through its DBTX, without
// sending it: fn calls one sqlc method. It is how a query is sent ahead.
func Record(fn func(db dbsqlc.DBTX) error) Statement {
	var r recorder
	_ = fn(&r) // the recorder fails the call once it has the query
	return r.q
}

// recorder is a DBTX that records the query it is given and fails it.
type recorder struct{ q Statement }

var errRecorded = errors.New("recorded, not sent")

func (r *recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.q = Statement{sql, args}
	return pgconn.CommandTag{}, errRecorded
}

func (r *recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.q = Statement{sql, args}
	return nil, errRecorded
}

func (r *recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.q = Statement{sql, args}
	return errRow{errRecorded}
}

// releaseSQL goes last in a batch that carried large arguments, in the
// same round trip. pgx encodes a statement's arguments into buffers of its
// connection and, before the next statement, truncates the list of them
// to no length but keeps its backing array (up to 64 entries): the entries
// past the next statement's own arguments still point into the previous
// statements' buffers, which stay reachable while the connection lives.
// A pool connection whose last large statement (a creation's InsertTasks,
// twenty-odd arguments) was followed by smaller ones (an Enqueue, eight)
// held megabytes that way while idle, and the process's heap goal twice
// that (see docs/performance.md, "Large arguments released with their
// round trip"). releaseSQL has 64 arguments of its own, which overwrite
// every entry a smaller list keeps; a list of more is not kept.
var releaseSQL = func() string {
	var b strings.Builder
	b.WriteString("-- name: ReleaseArgs (frees the encoded arguments of the statements before)\nSELECT coalesce(")
	for i := range releaseParams {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d::integer", i+1)
	}
	b.WriteString(")")
	return b.String()
}()

// releaseParams is how many entries of its list of encoded arguments pgx
// keeps from one statement to the next.
const releaseParams = 64

// releaseArgs are releaseSQL's arguments, all NULL: pgx encodes none of
// them into a buffer. Read only.
var releaseArgs = make([]any, releaseParams)

// largeArgs is the estimated size of a statement's arguments from which
// its batch ends with releaseSQL.
const largeArgs = 64 << 10

// carriesLargeArgs reports whether one of the statements' arguments are
// large.
func carriesLargeArgs(qs []*pgx.QueuedQuery) bool {
	for _, q := range qs {
		if argBytes(q.Arguments) >= largeArgs {
			return true
		}
	}
	return false
}

// argBytes estimates the size of args encoded: the bytes of strings and
// byte slices, and of the elements of other slices.
func argBytes(args []any) int {
	n := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n += len(v)
		case []byte:
			n += len(v)
		case []string:
			for _, s := range v {
				n += 4 + len(s)
			}
		case [][]byte:
			for _, b := range v {
				n += 4 + len(b)
			}
		default:
			if rv := reflect.ValueOf(a); rv.Kind() == reflect.Slice {
				n += rv.Len() * (4 + int(rv.Type().Elem().Size()))
			}
		}
	}
	return n
}
