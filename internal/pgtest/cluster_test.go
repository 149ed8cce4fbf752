package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dagenhq/dagen/internal/pgtest"
)

func TestCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := pgtest.NewPrimary(t, pgtest.ClusterOptions{Settings: map[string]string{"max_connections": "30"}})
	primary.CreateDatabase(t, "app")
	standby := primary.NewStandby(t, pgtest.ClusterOptions{})
	if !standby.InRecovery(t) || primary.InRecovery(t) {
		t.Fatal("want the standby in recovery and the primary not")
	}

	p := primary.Conn(t, "app")
	defer p.Close(ctx)
	mustExec(t, p, "CREATE TABLE kv (k int PRIMARY KEY, v text)")
	mustExec(t, p, "INSERT INTO kv VALUES (1, 'one')")
	primary.WaitReplayed(t, standby)

	s := standby.Conn(t, "app")
	defer s.Close(ctx)
	if got := readKV(t, s, 1); got != "one" {
		t.Fatalf("standby reads %q, want %q", got, "one")
	}
	if _, err := s.Exec(ctx, "INSERT INTO kv VALUES (2, 'two')"); err == nil {
		t.Fatal("a write on the standby succeeded")
	}

	// The multi-host URL parses, and finds the primary whichever comes first.
	url := pgtest.MultiHostURL("app", standby, primary)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	if len(cfg.Fallbacks) != 1 || cfg.Port != uint16(standby.Port()) {
		t.Fatalf("%s: want two hosts, the standby's first; got port %d and %d fallbacks", url, cfg.Port, len(cfg.Fallbacks))
	}
	m, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	mustExec(t, m, "INSERT INTO kv VALUES (2, 'two')")
	m.Close(ctx)

	// A lagging standby keeps what it had; a promoted one accepts writes.
	standby.StopStreaming(t)
	mustExec(t, p, "INSERT INTO kv VALUES (3, 'lost')")
	primary.Kill(t)
	standby.Promote(t)
	if standby.InRecovery(t) {
		t.Fatal("the promoted standby is still in recovery")
	}
	w := standby.Conn(t, "app")
	defer w.Close(ctx)
	if got := readKV(t, w, 2); got != "two" {
		t.Fatalf("the promoted standby reads %q for 2, want %q", got, "two")
	}
	if got := readKV(t, w, 3); got != "" {
		t.Fatalf("the promoted standby reads %q for 3, written after it stopped streaming", got)
	}
	mustExec(t, w, "INSERT INTO kv VALUES (3, 'three')")
	m, err = pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s after the failover: %v", url, err)
	}
	defer m.Close(ctx)
	if got := readKV(t, m, 3); got != "three" {
		t.Fatalf("the multi-host URL reads %q, want %q", got, "three")
	}

	// The old primary starts again, alone.
	primary.Start(t)
	old := primary.Conn(t, "app")
	defer old.Close(ctx)
	if got := readKV(t, old, 3); got != "lost" {
		t.Fatalf("the old primary reads %q, want %q", got, "lost")
	}
}

func mustExec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func readKV(t *testing.T, conn *pgx.Conn, k int) string {
	t.Helper()
	var v string
	err := conn.QueryRow(context.Background(), "SELECT v FROM kv WHERE k = $1", k).Scan(&v)
	if err != nil && err != pgx.ErrNoRows {
		t.Fatalf("read %d: %v", k, err)
	}
	return v
}
