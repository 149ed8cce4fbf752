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

// A pipeline runs sqlc queries with fewer round trips.
// Statements without results (Exec) are queued, not sent; a statement with
// results (Query, QueryRow) is sent together with everything queued before
// it, in one round trip, and so is the rest by send. Statements run in the
// order they were issued; the error of a queued statement surfaces at the
// next send, named after the statement.
//
// A query whose arguments are known before the result of the one before it
// can go with it (queryAhead): its rows are then read, without another
// round trip, by the next Query with the same SQL and arguments.
//
// Over a transaction the statements run in it. Over a pool, what one send
// carries runs in one implicit transaction: all of it or none.
type pipeline struct {
	db    batchDB
	batch *pgx.Batch // a new one for each send: the results read it as they come
	ahead []recorded // queries to send after the next query
	open  *openBatch // a sent batch with results of queries sent ahead still to read
}

// openBatch is a sent batch whose remaining results belong to queries sent
// ahead, in order.
type openBatch struct {
	br   pgx.BatchResults
	left []recorded
}

// batchDB is what a pipeline runs on: a pgx.Tx, a *pgxpool.Pool or a
// *pgxpool.Conn.
type batchDB interface {
	dbsqlc.DBTX
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}

var _ dbsqlc.DBTX = (*pipeline)(nil)

// Exec queues sql. Its command tag is not known yet and is empty.
func (p *pipeline) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if p.batch == nil {
		p.batch = &pgx.Batch{}
	}
	p.batch.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

// queryAhead sends q with the next query, whose result it does not depend
// on. The next Query after that must be q, with the same arguments, to read
// its rows; anything else discards them.
func (p *pipeline) queryAhead(q recorded) {
	p.ahead = append(p.ahead, q)
}

// Query returns sql's rows: those of a query sent ahead when it is the next
// one, or else it sends the queued statements, sql and the queries to send
// ahead.
func (p *pipeline) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if rows, ok, err := p.takeAhead(sql, args); ok || err != nil {
		return rows, err
	}
	if p.batch == nil && len(p.ahead) == 0 {
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
	return &pipelineRows{Rows: rows, br: br, p: p}, nil
}

// takeAhead returns the rows of the next query sent ahead if it is sql
// with args. Otherwise the results sent ahead are discarded.
func (p *pipeline) takeAhead(sql string, args []any) (pgx.Rows, bool, error) {
	o := p.open
	if o == nil {
		return nil, false, nil
	}
	if len(o.left) == 0 || o.left[0].sql != sql || !reflect.DeepEqual(o.left[0].args, args) {
		return nil, false, p.closeOpen()
	}
	o.left = o.left[1:]
	rows, err := o.br.Query()
	if err != nil {
		p.open = nil
		_ = o.br.Close()
		return nil, true, err
	}
	return &pipelineRows{Rows: rows, br: o.br, p: p}, true, nil
}

// closeOpen discards the unread results of queries sent ahead.
func (p *pipeline) closeOpen() error {
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

// QueryRow returns sql's row: that of a query sent ahead when it is the
// next one, or else it sends the queued statements, sql and the queries to
// send ahead.
func (p *pipeline) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if rows, ok, err := p.takeAhead(sql, args); ok || err != nil {
		if err != nil {
			return errRow{err}
		}
		return firstRow{rows}
	}
	if p.batch == nil && len(p.ahead) == 0 {
		return p.db.QueryRow(ctx, sql, args...)
	}
	br, err := p.sendQueued(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return pipelineRow{row: br.QueryRow(), br: br, p: p}
}

// send sends the queued statements and waits for them.
func (p *pipeline) send(ctx context.Context) error {
	if err := p.closeOpen(); err != nil {
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

// sendQueued sends the queued statements, then sql unless it is empty and
// the queries to send ahead, and reads the results of the queued ones. The
// caller reads sql's result; the batch stays open for the queries sent
// ahead, if any, and is closed with the last result read.
func (p *pipeline) sendQueued(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	if err := p.closeOpen(); err != nil {
		return nil, err
	}
	var ahead []recorded
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

// pipelineRows closes the batch with the rows, unless results of queries
// sent ahead are still to be read from it.
type pipelineRows struct {
	pgx.Rows
	br pgx.BatchResults
	p  *pipeline
}

func (r *pipelineRows) Close() {
	r.Rows.Close()
	if r.p.readsOn(r.br, true) {
		return
	}
	_ = r.br.Close() // the rows were the batch's last result: their Err reports failures
}

// readsOn reports whether br stays open after a result of it was read:
// when that result was read whole (ok) and queries sent ahead are left to
// read from it. Otherwise br is done with, and no longer open.
func (p *pipeline) readsOn(br pgx.BatchResults, ok bool) bool {
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

// pipelineRow closes the batch once the row is scanned, unless results of
// queries sent ahead are still to be read from it and the row was read.
type pipelineRow struct {
	row pgx.Row
	br  pgx.BatchResults
	p   *pipeline
}

func (r pipelineRow) Scan(dest ...any) error {
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

// recorded is a query as a sqlc method would send it.
type recorded struct {
	sql  string
	args []any
}

// record returns the query that fn sends through its DBTX, without
// sending it: fn calls one sqlc method. It is how a query is sent ahead.
func record(fn func(db dbsqlc.DBTX) error) recorded {
	var r recorder
	_ = fn(&r) // the recorder fails the call once it has the query
	return r.q
}

// recorder is a DBTX that records the query it is given and fails it.
type recorder struct{ q recorded }

var errRecorded = errors.New("recorded, not sent")

func (r *recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.q = recorded{sql, args}
	return pgconn.CommandTag{}, errRecorded
}

func (r *recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.q = recorded{sql, args}
	return nil, errRecorded
}

func (r *recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.q = recorded{sql, args}
	return errRow{errRecorded}
}
