package pgtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PgBouncerPath is where Debian's pgbouncer package puts the binary.
const PgBouncerPath = "/usr/sbin/pgbouncer"

// PgBouncerOptions configures StartPgBouncer.
type PgBouncerOptions struct {
	// PoolMode is PgBouncer's pool_mode: "transaction" (the default) or
	// "session".
	PoolMode string
	// DefaultPoolSize is how many server connections PgBouncer opens per
	// database and user. Default 20.
	DefaultPoolSize int
	// MaxClientConn bounds the clients PgBouncer accepts. Default 2000.
	MaxClientConn int
	// Server is the Postgres server PgBouncer forwards to, as host:port.
	// Default: the test server (URL).
	Server string
}

// PgBouncer is a PgBouncer process a test started.
type PgBouncer struct {
	// Addr is where PgBouncer listens, as 127.0.0.1:port.
	Addr string
	dir  string
}

// PgBouncerMatrix reports whether the whole engine test matrix should run
// through PgBouncer too (DAGEN_TEST_PGBOUNCER=all), not only the tests
// about sessions that do not last. make test leaves it off to stay within
// its time; docs/testing.md gives the command.
func PgBouncerMatrix() bool {
	return os.Getenv("DAGEN_TEST_PGBOUNCER") == "all"
}

// StartPgBouncer starts Debian's PgBouncer on a free port of 127.0.0.1,
// in front of opts.Server, with an ini file the test writes, and stops it
// when the test ends. Every database of the server is reachable through
// it, under its own name, as user postgres without a password. It fails
// the test when PgBouncer is not installed, saying how to install it.
func StartPgBouncer(t testing.TB, opts PgBouncerOptions) *PgBouncer {
	t.Helper()
	if _, err := os.Stat(PgBouncerPath); err != nil {
		t.Fatalf("pgtest: %s not found: install Debian's pgbouncer package (apt-get install pgbouncer; .ci/run does)", PgBouncerPath)
	}
	if opts.PoolMode == "" {
		opts.PoolMode = "transaction"
	}
	if opts.DefaultPoolSize <= 0 {
		opts.DefaultPoolSize = 20
	}
	if opts.MaxClientConn <= 0 {
		opts.MaxClientConn = 2000
	}
	host, port := serverHostPort(t, opts.Server)
	dir := ownedTempDir(t, "pgbouncer")
	listen := FreePort(t)
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
default_pool_size = %d
max_client_conn = %d
logfile = %s
pidfile = %s
admin_users = postgres
ignore_startup_parameters = extra_float_digits
server_login_retry = 1
`, host, port, listen, filepath.Join(dir, "userlist.txt"), opts.PoolMode, opts.DefaultPoolSize,
		opts.MaxClientConn, filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
	writeOwned(t, filepath.Join(dir, "userlist.txt"), `"postgres" ""`+"\n")
	writeOwned(t, filepath.Join(dir, "pgbouncer.ini"), ini)

	args := []string{filepath.Join(dir, "pgbouncer.ini")}
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root; -u switches to postgres.
		args = append([]string{"-u", "postgres"}, args...)
	}
	cmd := exec.Command(PgBouncerPath, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("pgtest: start pgbouncer: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	b := &PgBouncer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(listen)), dir: dir}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", b.Addr, time.Second)
		if err == nil {
			_ = c.Close()
			return b
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			t.Fatalf("pgtest: pgbouncer exited: %s\n%s", out.String(), log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgtest: pgbouncer does not listen on %s after 10s: %v", b.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// URL returns a URL to database through PgBouncer.
func (b *PgBouncer) URL(database string) string {
	return (&url.URL{
		Scheme: "postgres", User: url.User("postgres"), Host: b.Addr, Path: "/" + database,
		RawQuery: "sslmode=disable",
	}).String()
}

// Log returns what PgBouncer logged so far.
func (b *PgBouncer) Log() string {
	log, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
	return string(log)
}

// Database creates an empty database named dagen_test_<random> on the test
// server and drops it when the test ends, closing what is still connected
// to it. Through PgBouncer, a test uses a database of its own rather than a
// schema: PgBouncer refuses a search_path in the startup packet.
// Many subtests of one test borrow from NewDatabases instead.
func Database(t testing.TB) string {
	t.Helper()
	name := newDatabase(t)
	t.Cleanup(func() { Exec(t, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	return name
}

// newDatabase creates an empty database named dagen_test_<random>.
func newDatabase(t testing.TB) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "dagen_test_" + hex.EncodeToString(b[:])
	Exec(t, "CREATE DATABASE "+name)
	return name
}

// DatabaseURL returns URL with its database replaced by database.
func DatabaseURL(t testing.TB, database string) string {
	t.Helper()
	u, err := url.Parse(URL())
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", URL(), err)
	}
	u.Path = "/" + database
	return u.String()
}

// FreePort returns a TCP port of 127.0.0.1 that nothing listened on a
// moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// serverHostPort returns addr's host and port, or the test server's.
func serverHostPort(t testing.TB, addr string) (string, int) {
	t.Helper()
	if addr == "" {
		cfg, err := pgx.ParseConfig(URL())
		if err != nil {
			t.Fatalf("pgtest: parse %s: %v", URL(), err)
		}
		return cfg.Host, int(cfg.Port)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("pgtest: server address %q: %v", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("pgtest: server port %q: %v", port, err)
	}
	return host, p
}

// ownedTempDir makes a directory that the postgres OS user owns when the
// test runs as root (the servers a test starts run as postgres), and
// removes it when the test ends.
func ownedTempDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dagen-"+prefix+"-")
	if err != nil {
		t.Fatalf("pgtest: temp dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	chownPostgres(t, dir)
	return dir
}

// writeOwned writes a file that the postgres OS user can read.
func writeOwned(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatalf("pgtest: write %s: %v", path, err)
	}
	chownPostgres(t, path)
}

// postgresUser returns the postgres OS user's ids when the test runs as
// root, which the servers a test starts must not run as; ok is false when
// the test runs as another user, whom the servers then run as.
func postgresUser(t testing.TB) (uid, gid int, ok bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		return 0, 0, false
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("pgtest: running as root, Postgres and PgBouncer need another user to run as: create the postgres OS user or run as a non-root user: %v", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, true
}

// chownPostgres gives path to the postgres OS user when running as root.
func chownPostgres(t testing.TB, path string) {
	t.Helper()
	uid, gid, ok := postgresUser(t)
	if !ok {
		return
	}
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatalf("pgtest: give %s to the postgres user: %v", path, err)
	}
}
