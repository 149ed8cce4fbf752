package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/dagenhq/dagen/runtime/console"
)

// uiAuthFlags are dagen ui's flags that say who may use the console.
type uiAuthFlags struct {
	file          string
	proxyUser     string
	proxyRole     string
	forwardProto  bool
	session       time.Duration
	tlsCert, tlsK string
}

// noAuth is what dagen ui says when it will not serve a non-loopback
// address to everybody.
const noAuth = `dagen ui: refusing to serve %s without authentication: anyone who reaches it could see every run and cancel or retry them.
Configure one of:
	DAGEN_UI_OPERATOR_PASSWORD=…  (user "operator"; DAGEN_UI_PASSWORD=… adds user "viewer", read-only)
	-auth-file FILE               (or $DAGEN_UI_AUTH_FILE; lines "name viewer|operator password")
	-proxy-user-header NAME       (behind a reverse proxy that authenticates and sets the header NAME)
or listen on a loopback address (-addr 127.0.0.1:8080). See docs/operating.md, "The console's authentication".
`

// auth returns the console's Auth from the flags and the environment, nil
// when none is configured.
func (f uiAuthFlags) auth(stderr io.Writer) (*console.Auth, error) {
	a := &console.Auth{
		ProxyUserHeader: f.proxyUser, ProxyRoleHeader: f.proxyRole,
		TrustForwardedProto: f.forwardProto, SessionTTL: f.session,
	}
	if f.proxyRole != "" && f.proxyUser == "" {
		return nil, errors.New("-proxy-role-header needs -proxy-user-header")
	}
	for _, env := range []struct {
		name, user string
		role       console.Role
	}{{"DAGEN_UI_OPERATOR_PASSWORD", "operator", console.Operator}, {"DAGEN_UI_PASSWORD", "viewer", console.Viewer}} {
		if p := os.Getenv(env.name); p != "" {
			a.Accounts = append(a.Accounts, console.Account{Name: env.user, Role: env.role, Password: p})
		}
	}
	file := f.file
	if file == "" {
		file = os.Getenv("DAGEN_UI_AUTH_FILE")
	}
	if file != "" {
		accs, err := readAccounts(file, stderr)
		if err != nil {
			return nil, err
		}
		a.Accounts = append(a.Accounts, accs...)
	}
	if len(a.Accounts) == 0 && a.ProxyUserHeader == "" {
		return nil, nil
	}
	return a, nil
}

// readAccounts reads a file of accounts: a line each, "name role
// password", the role viewer or operator, the password the rest of the
// line (or sha256:HEX); blank lines and lines starting with # are
// skipped.
func readAccounts(path string, stderr io.Writer) ([]console.Account, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("auth file: %w", err)
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(stderr, "dagen ui: warning: %s is readable by others (mode %v): chmod 600 it\n", path, fi.Mode().Perm())
	}
	var accs []console.Account
	sc := bufio.NewScanner(fh)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		role, pass, _ := strings.Cut(strings.TrimSpace(rest), " ")
		pass = strings.TrimSpace(pass)
		r, err := console.ParseRole(role)
		if err != nil || pass == "" {
			return nil, fmt.Errorf(`%s:%d: want "name viewer|operator password"`, path, n)
		}
		accs = append(accs, console.Account{Name: name, Role: r, Password: pass})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("auth file: %w", err)
	}
	if len(accs) == 0 {
		return nil, fmt.Errorf("%s: no accounts", path)
	}
	return accs, nil
}

// loopback reports whether addr (host:port) listens on a loopback
// address only: localhost or a loopback IP. An empty host (every
// interface) or any other name is not.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
