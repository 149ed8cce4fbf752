// Package pgtest gives each test its own Postgres schema, so tests run in
// parallel against one server and leave nothing behind.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultURL is the database tests use when DATABASE_URL is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// URL returns DATABASE_URL, or DefaultURL.
func URL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// SchemaURL returns URL with its search_path set to schema, for processes
// the test starts.
func SchemaURL(t testing.TB, schema string) string {
	t.Helper()
	u, err := url.Parse(URL())
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", URL(), err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// ServerAddr returns how to reach the test server directly: "tcp" and
// host:port, or "unix" and the socket's path when URL names a socket
// directory.
func ServerAddr(t testing.TB) (network, address string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(URL())
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", URL(), err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		return "unix", filepath.Join(cfg.Host, fmt.Sprintf(".s.PGSQL.%d", cfg.Port))
	}
	return "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}

// ViaURL returns SchemaURL(schema) with its host and port replaced by addr
// (host:port), such as a proxy's in front of the test server.
func ViaURL(t testing.TB, schema, addr string) string {
	t.Helper()
	u, err := url.Parse(SchemaURL(t, schema))
	if err != nil {
		t.Fatalf("pgtest: parse: %v", err)
	}
	u.Host = addr
	q := u.Query()
	q.Del("host")
	q.Del("port")
	u.RawQuery = q.Encode()
	return u.String()
}

// Schema creates an empty schema named dagen_test_<random> and drops it,
// with everything in it, when the test ends.
// The subtests of a suite that each migrate a schema borrow one from
// NewSchemas instead.
func Schema(t testing.TB) string {
	t.Helper()
	name := newSchemaName()
	Exec(t, "CREATE SCHEMA "+name)
	t.Cleanup(func() { Exec(t, "DROP SCHEMA IF EXISTS "+name+" CASCADE") })
	return name
}

// newSchemaName returns dagen_test_<random>.
func newSchemaName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "dagen_test_" + hex.EncodeToString(b[:])
}

// Pool returns a pool of at most maxConns connections whose search_path
// is schema. It is closed when the test ends, before the schema is
// dropped.
func Pool(t testing.TB, schema string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(URL())
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", URL(), err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = maxConns
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		t.Fatalf("pgtest: connect (set DATABASE_URL to a reachable server): %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewPool is Schema and Pool in one step.
func NewPool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	return Pool(t, Schema(t), maxConns)
}

// Exec runs one statement on a fresh connection to URL.
func Exec(t testing.TB, sql string) {
	t.Helper()
	if err := execSQL(sql); err != nil {
		t.Fatal(err)
	}
}

// execSQL is Exec for callers without a test.
func execSQL(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, URL())
	if err != nil {
		return fmt.Errorf("pgtest: connect to %s: %w", URL(), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("pgtest: %s: %w", sql, err)
	}
	return nil
}
