package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ClusterOptions configures a Cluster the test owns.
type ClusterOptions struct {
	// Settings are extra postgresql.conf lines, name to value as the file
	// spells it: "max_connections": "100", "synchronous_standby_names":
	// "'*'". A standby does not inherit its primary's Settings.
	Settings map[string]string
}

// Cluster is a private Postgres server (a primary or a streaming standby)
// that a test starts, kills, promotes and removes without touching the
// shared server at URL.
type Cluster struct {
	bin      string              // directory of initdb, pg_ctl, pg_basebackup
	dir      string              // owned by the server's user: data/, the socket, log
	port     int                 // TCP port on 127.0.0.1
	cred     *syscall.Credential // run server programs as this user (root cannot)
	conninfo string              // a standby's primary_conninfo, to resume streaming
}

// clusterConf is the file, in the data directory, that holds the
// harness's settings; postgresql.conf includes it last, so a standby
// overwrites its copy without editing the primary's postgresql.conf.
const clusterConf = "dagen_test.conf"

// NewPrimary initializes a cluster in a fresh directory, starts it on
// 127.0.0.1 and a free port with wal_level=replica, and stops and removes
// it when the test ends. It skips the test when no initdb is installed.
func NewPrimary(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	c := newCluster(t)
	c.run(t, "initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C")
	f, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("pgtest: open postgresql.conf of the new cluster in %s: %v", c.dir, err)
	}
	_, err = fmt.Fprintf(f, "\ninclude_if_exists = '%s'\n", clusterConf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("pgtest: append to postgresql.conf in %s: %v", c.dir, err)
	}
	c.startOnFreePort(t, opts)
	return c
}

// NewStandby copies c with pg_basebackup (-R, WAL streamed) into a fresh
// directory, starts the copy on a free port as a hot standby, and waits
// until it is in recovery and streaming from c. It is stopped and removed
// when the test ends.
func (c *Cluster) NewStandby(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	s := newCluster(t)
	s.run(t, "pg_basebackup", "-D", s.data(), "-R", "-X", "stream", "-c", "fast", "--no-sync",
		"-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", "postgres")
	s.conninfo = s.autoConf(t, "primary_conninfo")
	s.dropAutoConf(t, "synchronous_standby_names")
	s.startOnFreePort(t, opts)
	s.waitStreaming(t)
	return s
}

// Rejoin makes c, stopped or killed, a fresh standby of primary with
// pg_basebackup, on the port c had, and waits until it streams: the way a
// failed primary comes back after a failover, so that a multi-host URL
// that names both keeps working across rounds.
func (c *Cluster) Rejoin(t testing.TB, primary *Cluster, opts ClusterOptions) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err == nil {
		c.Kill(t)
	}
	if err := os.RemoveAll(c.data()); err != nil {
		t.Fatalf("pgtest: remove %s: %v", c.data(), err)
	}
	c.run(t, "pg_basebackup", "-D", c.data(), "-R", "-X", "stream", "-c", "fast", "--no-sync",
		"-h", "127.0.0.1", "-p", strconv.Itoa(primary.port), "-U", "postgres")
	c.conninfo = c.autoConf(t, "primary_conninfo")
	c.dropAutoConf(t, "synchronous_standby_names")
	c.writeConf(t, opts)
	c.Start(t)
	c.waitStreaming(t)
}

// Port is the TCP port the cluster listens on at 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// URL is a connection string for database on this cluster.
func (c *Cluster) URL(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, database)
}

// MultiHostURL is a connection string that lists every cluster and asks
// for the one that accepts writes (target_session_attrs=read-write), as a
// worker that follows a failover connects.
func MultiHostURL(database string, cs ...*Cluster) string {
	hosts := make([]string, len(cs))
	for i, c := range cs {
		hosts[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port))
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&target_session_attrs=read-write",
		strings.Join(hosts, ","), database)
}

// Log returns what the server logged so far (its stderr, which pg_ctl
// sends to a file in the cluster's directory): a test looks there for
// what clients were refused.
func (c *Cluster) Log(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "log"))
	if err != nil {
		t.Fatalf("pgtest: read the log of the cluster on port %d: %v", c.port, err)
	}
	return string(b)
}

// Kill stops the server at once (pg_ctl stop -m immediate): no checkpoint,
// connections cut, as if its machine had died.
func (c *Cluster) Kill(t testing.TB) {
	t.Helper()
	c.ctl(t, "stop", "-w", "-m", "immediate")
}

// Stop shuts the server down cleanly (pg_ctl stop -m fast).
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	c.ctl(t, "stop", "-w", "-m", "fast")
}

// Start starts a stopped server again on its port.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	if err := c.start(); err != nil {
		t.Fatalf("pgtest: start the cluster in %s (see its log there): %v", c.dir, err)
	}
}

// Promote ends a standby's recovery (pg_ctl promote -w) and waits until it
// accepts writes.
func (c *Cluster) Promote(t testing.TB) {
	t.Helper()
	c.ctl(t, "promote", "-w")
	c.waitFor(t, "promoted to accept writes", func(conn *pgx.Conn) (bool, error) {
		var ro string
		err := conn.QueryRow(context.Background(), "SHOW transaction_read_only").Scan(&ro)
		return ro == "off", err
	})
}

// Exec runs sql on the cluster's postgres database.
func (c *Cluster) Exec(t testing.TB, sql string) {
	t.Helper()
	conn := c.Conn(t, "postgres")
	defer conn.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: cluster on port %d: %s: %v", c.port, sql, err)
	}
}

// CreateDatabase creates database name on the cluster.
func (c *Cluster) CreateDatabase(t testing.TB, name string) {
	t.Helper()
	c.Exec(t, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
}

// Conn connects to database on the cluster; the caller closes it.
func (c *Cluster) Conn(t testing.TB, database string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL(database))
	if err != nil {
		t.Fatalf("pgtest: connect to the cluster on port %d (is it running? its log is in %s): %v", c.port, c.dir, err)
	}
	return conn
}

// InRecovery reports whether the server is a standby (pg_is_in_recovery).
func (c *Cluster) InRecovery(t testing.TB) bool {
	t.Helper()
	conn := c.Conn(t, "postgres")
	defer conn.Close(context.Background())
	var in bool
	if err := conn.QueryRow(context.Background(), "SELECT pg_is_in_recovery()").Scan(&in); err != nil {
		t.Fatalf("pgtest: cluster on port %d: pg_is_in_recovery: %v", c.port, err)
	}
	return in
}

// Set changes a setting with ALTER SYSTEM and reloads the configuration,
// for settings a reload applies (synchronous_standby_names,
// synchronous_commit, primary_conninfo…). A standby made later by
// NewStandby keeps what Set wrote, but for synchronous_standby_names.
func (c *Cluster) Set(t testing.TB, name, value string) {
	t.Helper()
	c.Exec(t, "ALTER SYSTEM SET "+pgx.Identifier{name}.Sanitize()+" = "+value)
	c.Exec(t, "SELECT pg_reload_conf()")
}

// StopStreaming makes a standby lag: it clears primary_conninfo, so the
// standby keeps what it has and receives nothing more, and waits until
// its WAL receiver is gone. Writes to a primary that waits for this
// standby synchronously block until ResumeStreaming.
func (c *Cluster) StopStreaming(t testing.TB) {
	t.Helper()
	if c.conninfo == "" {
		t.Fatalf("pgtest: StopStreaming: the cluster on port %d is not a standby made by NewStandby", c.port)
	}
	c.Exec(t, "ALTER SYSTEM SET primary_conninfo = ''")
	c.Exec(t, "SELECT pg_reload_conf()")
	c.waitFor(t, "its WAL receiver to stop", func(conn *pgx.Conn) (bool, error) {
		var n int
		err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_wal_receiver").Scan(&n)
		return n == 0, err
	})
	// What it received before the receiver stopped is replayed still: a
	// test that reads the standby's history next must see all of it. The
	// replay reaches what was received, or stops short of a record cut in
	// two: it stands still then. Once the receiver is gone, the replay
	// reads the WAL files themselves (every wal_retrieve_retry_interval:
	// see writeConf) and may go past the position the receiver last
	// reported: so the replay must also stand still a while when it has
	// reached that position. Without that, the replay went on after the
	// test had read the history, and the test took a claim the standby
	// then replayed for one it had lost.
	var last string
	var since time.Time
	c.waitFor(t, "the replay of what it received", func(conn *pgx.Conn) (bool, error) {
		var done bool
		var at string
		err := conn.QueryRow(context.Background(),
			"SELECT coalesce(pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn(), true), coalesce(pg_last_wal_replay_lsn()::text, '')").Scan(&done, &at)
		if at != last {
			last, since = at, time.Now()
		}
		still := time.Since(since)
		return done && still > time.Second || still > 3*time.Second, err
	})
}

// ResumeStreaming undoes StopStreaming and waits until the standby streams
// again.
func (c *Cluster) ResumeStreaming(t testing.TB) {
	t.Helper()
	c.Exec(t, "ALTER SYSTEM SET primary_conninfo = "+quoteLiteral(c.conninfo))
	c.Exec(t, "SELECT pg_reload_conf()")
	c.waitStreaming(t)
}

// WaitReplayed waits until standby has replayed everything primary c has
// written so far.
func (c *Cluster) WaitReplayed(t testing.TB, standby *Cluster) {
	t.Helper()
	conn := c.Conn(t, "postgres")
	var lsn string
	err := conn.QueryRow(context.Background(), "SELECT pg_current_wal_lsn()::text").Scan(&lsn)
	conn.Close(context.Background())
	if err != nil {
		t.Fatalf("pgtest: cluster on port %d: pg_current_wal_lsn: %v", c.port, err)
	}
	standby.waitFor(t, "replay of "+lsn, func(conn *pgx.Conn) (bool, error) {
		var done bool
		err := conn.QueryRow(context.Background(),
			"SELECT coalesce(pg_last_wal_replay_lsn() >= $1::text::pg_lsn, false)", lsn).Scan(&done)
		return done, err
	})
}

func newCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := postgresBin()
	if bin == "" {
		t.Fatalf("pgtest: no initdb on PATH or under /usr/lib/postgresql/*/bin: install the Postgres server binaries (Debian's postgresql package) to run this test")
	}
	c := &Cluster{bin: bin}
	var err error
	if c.dir, err = os.MkdirTemp("", "dagen-pg-"); err != nil {
		t.Fatalf("pgtest: make a directory for a cluster: %v", err)
	}
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err == nil {
			_ = c.command("pg_ctl", "-D", c.data(), "stop", "-w", "-m", "immediate").Run()
		}
		_ = os.RemoveAll(c.dir)
	})
	if uid, gid, ok := postgresUser(t); ok {
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		chownPostgres(t, c.dir)
	}
	return c
}

// postgresBin finds the newest server binaries.
func postgresBin() string {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) > 0 {
		sort.Slice(bins, func(i, j int) bool { return version(bins[i]) < version(bins[j]) })
		return filepath.Dir(bins[len(bins)-1])
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// startOnFreePort writes the cluster's settings and starts it, on another
// free port if someone took the one it picked in between.
func (c *Cluster) startOnFreePort(t testing.TB, opts ClusterOptions) {
	t.Helper()
	var err error
	for range 5 {
		c.port = FreePort(t)
		c.writeConf(t, opts)
		if err = c.start(); err == nil {
			return
		}
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		if !strings.Contains(string(log), "could not bind") && !strings.Contains(string(log), "already in use") {
			break
		}
	}
	t.Fatalf("pgtest: start the cluster in %s (its log is there; check the Settings): %v", c.dir, err)
}

func (c *Cluster) writeConf(t testing.TB, opts ClusterOptions) {
	t.Helper()
	settings := map[string]string{
		"listen_addresses":          "'127.0.0.1'",
		"port":                      strconv.Itoa(c.port),
		"unix_socket_directories":   quoteLiteral(c.dir),
		"fsync":                     "off",
		"shared_buffers":            "16MB",
		"wal_level":                 "replica",
		"max_wal_senders":           "10",
		"wal_keep_size":             "512MB",
		"hot_standby":               "on",
		"synchronous_standby_names": "''",
		// A standby whose receiver stopped (StopStreaming) goes on
		// replaying the WAL files it has, but looks for more only every
		// wal_retrieve_retry_interval (5 s by default): its replay stood
		// still that long, then went on past what a test had taken for
		// the standby's whole history.
		"wal_retrieve_retry_interval": "'100ms'",
	}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# written by pgtest.Cluster\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, settings[k])
	}
	path := filepath.Join(c.data(), clusterConf)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatalf("pgtest: write %s: %v", path, err)
	}
	if c.cred != nil {
		if err := os.Chown(path, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			t.Fatalf("pgtest: give %s to the postgres user: %v", path, err)
		}
	}
}

func (c *Cluster) start() error {
	out, err := c.command("pg_ctl", "-D", c.data(), "start", "-w", "-t", "60", "-l", filepath.Join(c.dir, "log")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl start: %w\n%s", err, out)
	}
	return nil
}

// waitStreaming waits until the standby is in recovery and its WAL
// receiver streams.
func (c *Cluster) waitStreaming(t testing.TB) {
	t.Helper()
	c.waitFor(t, "recovery and streaming from its primary", func(conn *pgx.Conn) (bool, error) {
		var ok bool
		err := conn.QueryRow(context.Background(),
			"SELECT pg_is_in_recovery() AND EXISTS (SELECT FROM pg_stat_wal_receiver WHERE status = 'streaming')").Scan(&ok)
		return ok, err
	})
}

// waitFor polls cond on a connection to the postgres database for up to
// a minute; connection errors count as not yet.
func (c *Cluster) waitFor(t testing.TB, what string, cond func(*pgx.Conn) (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		cancel()
		if err == nil {
			var ok bool
			ok, err = cond(conn)
			conn.Close(context.Background())
			if ok && err == nil {
				return
			}
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pgtest: the cluster on port %d did not reach %s within a minute (its log is in %s): %v", c.port, what, c.dir, last)
}

// autoConf reads a setting from a data directory's postgresql.auto.conf, where
// pg_basebackup -R writes primary_conninfo.
func (c *Cluster) autoConf(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(c.data(), "postgresql.auto.conf")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pgtest: read %s: %v", path, err)
	}
	val := ""
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != name {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = strings.ReplaceAll(v[1:len(v)-1], "''", "'")
		}
		val = v // the last line wins, as in Postgres
	}
	if val == "" {
		t.Fatalf("pgtest: pg_basebackup -R wrote no %s to %s", name, path)
	}
	return val
}

// dropAutoConf removes a setting that ALTER SYSTEM on the primary wrote
// from a fresh standby's postgresql.auto.conf: a standby promoted with its
// primary's synchronous_standby_names would wait for standbys it does not
// have, and block every commit.
func (c *Cluster) dropAutoConf(t testing.TB, name string) {
	t.Helper()
	path := filepath.Join(c.data(), "postgresql.auto.conf")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pgtest: read %s: %v", path, err)
	}
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		if k, _, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == name {
			continue
		}
		keep = append(keep, line)
	}
	if err := os.WriteFile(path, []byte(strings.Join(keep, "\n")), 0o600); err != nil {
		t.Fatalf("pgtest: write %s: %v", path, err)
	}
}

func (c *Cluster) ctl(t testing.TB, args ...string) {
	t.Helper()
	out, err := c.command("pg_ctl", append([]string{"-D", c.data()}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pgtest: pg_ctl %s for the cluster in %s (its log is there): %v\n%s", strings.Join(args, " "), c.dir, err, out)
	}
}

func (c *Cluster) run(t testing.TB, name string, args ...string) {
	t.Helper()
	out, err := c.command(name, args...).CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w\n%s", err, out)
		}
		t.Fatalf("pgtest: %s %s: %v", name, strings.Join(args, " "), err)
	}
}

// command runs one of the server's programs as the server's user, in its
// directory, without the caller's PG* variables.
func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
