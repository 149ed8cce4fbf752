package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNoSession is wrapped by Subscribe's and SubscribeCancels' error when
// the store has no connection whose session lasts across transactions:
// its pool goes through a connection pooler and [Config.SessionURL] is
// empty. Workers then poll, and cancellations reach running steps with the
// next heartbeat.
var ErrNoSession = errors.New("no session-keeping connection for LISTEN: the pool's connections go through a connection pooler; set pgstore.Config.SessionURL to a direct or session-pooled URL of the same database for notifications")

// reachesServer reports whether conn reaches Postgres itself rather than a
// connection pooler: the server sees this connection's own address as its
// client's (for a Unix socket: the socket is the server's own port). Only
// then does a session's state, a LISTEN above all, last across
// transactions. A pooler in session mode, or a TCP proxy, is taken for a
// transaction pooler: a false "no" costs notifications (set SessionURL),
// a false "yes" would cost correctness.
func reachesServer(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var (
		addr, serverPort string
		port             *int32
	)
	// The simple protocol prepares nothing that a transaction pooler
	// could lose between round trips.
	err := conn.QueryRow(ctx,
		`SELECT coalesce(host(inet_client_addr()), ''), inet_client_port(), current_setting('port')`,
		pgx.QueryExecModeSimpleProtocol,
	).Scan(&addr, &port, &serverPort)
	if err != nil {
		return false, fmt.Errorf("ask the server who its client is: %w", err)
	}
	nc := conn.PgConn().Conn()
	switch local := nc.LocalAddr().(type) {
	case *net.TCPAddr:
		ip := net.ParseIP(addr)
		return port != nil && int(*port) == local.Port && ip != nil && ip.Equal(local.IP), nil
	case *net.UnixAddr:
		socket := nc.RemoteAddr().String()
		return addr == "" && port == nil && filepath.Base(socket) == ".s.PGSQL."+serverPort, nil
	}
	return false, nil
}

// probeSession reports whether pool's connections reach Postgres itself
// (reachesServer).
func probeSession(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("acquire a connection: %w", err)
	}
	defer pc.Release()
	return reachesServer(ctx, pc.Conn())
}

// sessionConfig parses url as the store's session URL: a connection
// string to the same database as pool that keeps its session. The
// search_path of pool's connections is the session's too, unless url sets
// one.
func sessionConfig(url string, pool *pgxpool.Pool) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parse the session URL: %w", err)
	}
	if _, ok := cfg.RuntimeParams["search_path"]; !ok {
		if sp, ok := pool.Config().ConnConfig.RuntimeParams["search_path"]; ok {
			cfg.RuntimeParams["search_path"] = sp
		}
	}
	return cfg, nil
}

// checkSession connects once to the session URL and checks that it leads
// to the pool's database and schema, so that a wrong URL fails New rather
// than losing every notification.
func (s *Store) checkSession(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, s.session.Copy())
	if err != nil {
		return fmt.Errorf("pgstore: connect to the session URL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	const where = `SELECT current_database() || '.' || coalesce(current_schema(), '')`
	var there, here string
	if err := conn.QueryRow(ctx, where, pgx.QueryExecModeSimpleProtocol).Scan(&there); err != nil {
		return fmt.Errorf("pgstore: session URL: %w", err)
	}
	if err := s.pool.QueryRow(ctx, where).Scan(&here); err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	if there != here {
		return fmt.Errorf("pgstore: the session URL leads to %s, the pool to %s: give both the same database and search_path", there, here)
	}
	return nil
}

// sessionConn returns a new connection whose session lasts: one to the
// session URL, or one taken out of the pool when the pool reaches Postgres
// itself. Otherwise it fails with ErrNoSession.
func (s *Store) sessionConn(ctx context.Context) (*pgx.Conn, error) {
	if s.session != nil {
		conn, err := pgx.ConnectConfig(ctx, s.session.Copy())
		if err != nil {
			return nil, fmt.Errorf("connect to the session URL: %w", err)
		}
		return conn, nil
	}
	if !s.direct {
		return nil, ErrNoSession
	}
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire a connection: %w", err)
	}
	return pc.Hijack(), nil
}

// explicitExecMode reports whether url chooses pgx's statement mode.
func explicitExecMode(url string) bool {
	return strings.Contains(url, "default_query_exec_mode")
}
