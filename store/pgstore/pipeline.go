package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dagenhq/dagen/store/pgstore/internal/dbsqlc"
)

// A pipeline runs sqlc queries with fewer round trips.
// Statements without results (Exec) are queued, not sent; a statement with
// results (Query, QueryRow) is sent together with everything queued before
// it, in one round trip, and so is the rest by send. Statements run in the
// order they were issued; the error of a queued statement surfaces at the
// next send, named after the statement.
//
// Over a transaction the statements run in it. Over a pool, what one send
// carries runs in one implicit transaction: all of it or none.
type pipeline struct {
	db    batchDB
	batch *pgx.Batch // a new one for each send: the results read it as they come
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

// Query sends the queued statements and sql, and returns sql's rows.
func (p *pipeline) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if p.batch == nil {
		return p.db.Query(ctx, sql, args...)
	}
	br, err := p.sendQueued(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &pipelineRows{Rows: rows, br: br}, nil
}

// QueryRow sends the queued statements and sql, and returns sql's row.
func (p *pipeline) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if p.batch == nil {
		return p.db.QueryRow(ctx, sql, args...)
	}
	br, err := p.sendQueued(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return pipelineRow{row: br.QueryRow(), br: br}
}

// send sends the queued statements and waits for them.
func (p *pipeline) send(ctx context.Context) error {
	if p.batch == nil {
		return nil
	}
	br, err := p.sendQueued(ctx, "", nil)
	if err != nil {
		return err
	}
	return br.Close()
}

// sendQueued sends the queued statements, then sql unless it is empty, and
// reads the results of the queued ones. The caller reads sql's result and
// closes the batch.
func (p *pipeline) sendQueued(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := p.batch
	p.batch = nil
	queued := b.QueuedQueries
	if sql != "" {
		b.Queue(sql, args...)
	}
	br := p.db.SendBatch(ctx, b)
	for _, q := range queued {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, fmt.Errorf("%s: %w", statementName(q.SQL), err)
		}
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

// pipelineRows closes the batch with the rows.
type pipelineRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *pipelineRows) Close() {
	r.Rows.Close()
	_ = r.br.Close() // the rows were the batch's last result: their Err reports failures
}

// pipelineRow closes the batch once the row is scanned.
type pipelineRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r pipelineRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// errRow is a row that failed before it was read.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
