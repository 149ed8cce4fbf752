package crashtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pgCluster is a private PostgreSQL server the test owns, so it can stop
// and restart it without disturbing anyone else.
type pgCluster struct {
	t    *testing.T
	bin  string // directory of initdb, pg_ctl
	dir  string // data directory and socket directory
	port int
	uid  *syscall.Credential // run server commands as this user (root cannot)
}

// newPGCluster initializes and starts a private cluster, stopped when the
// test ends.
func newPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	require.NotEmpty(t, bins, "no initdb under /usr/lib/postgresql/*/bin")
	sort.Strings(bins)
	c := &pgCluster{t: t, bin: filepath.Dir(bins[len(bins)-1]), port: freePort(t)}
	dir, err := os.MkdirTemp("", "dagen-pg-")
	require.NoError(t, err)
	c.dir = dir
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		require.NoError(t, err, "running as root: need the postgres user to run the server")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.uid = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		require.NoError(t, os.Chown(dir, uid, gid))
	}
	c.run("initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "--no-sync")
	c.start()
	t.Cleanup(func() { c.ctl("stop", "-m", "immediate") })
	return c
}

func (c *pgCluster) data() string { return filepath.Join(c.dir, "data") }

// URL is the cluster's connection string.
func (c *pgCluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

func (c *pgCluster) start() {
	c.ctl("start", "-w", "-l", filepath.Join(c.dir, "log"),
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", c.port, c.dir))
}

// restart stops the server (fast shutdown: connections are cut), waits,
// and starts it again.
func (c *pgCluster) restart(down time.Duration) {
	c.ctl("stop", "-w", "-m", "fast")
	time.Sleep(down)
	c.start()
}

func (c *pgCluster) ctl(args ...string) {
	c.run("pg_ctl", append([]string{"-D", c.data()}, args...)...)
}

func (c *pgCluster) run(name string, args ...string) {
	c.t.Helper()
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	if c.uid != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.uid}
	}
	out, err := cmd.CombinedOutput()
	require.NoError(c.t, err, "%s %v:\n%s", name, args, out)
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
