package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/console"
)

// TestUIRefusesNonLoopbackWithoutAuth: dagen ui will not serve every
// interface to everybody, and says how to configure authentication; with
// a password it goes on (to the database, which this test has none of).
func TestUIRefusesNonLoopbackWithoutAuth(t *testing.T) {
	for _, env := range []string{"DAGEN_UI_PASSWORD", "DAGEN_UI_OPERATOR_PASSWORD", "DAGEN_UI_AUTH_FILE", "DATABASE_URL"} {
		t.Setenv(env, "")
	}
	run := func(args ...string) (int, string) {
		var stdout, stderr strings.Builder
		code := ui(context.Background(), args, &stdout, &stderr)
		return code, stderr.String()
	}
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "example.com:8080"} {
		code, stderr := run("-addr", addr)
		require.Equal(t, ExitError, code, addr)
		require.Contains(t, stderr, "refusing to serve "+addr+" without authentication", addr)
		require.Contains(t, stderr, "DAGEN_UI_OPERATOR_PASSWORD")
		require.Contains(t, stderr, "-auth-file")
		require.Contains(t, stderr, "-proxy-user-header")
	}
	code, stderr := run("-addr", "127.0.0.1:0")
	require.Equal(t, ExitError, code)
	require.Contains(t, stderr, "no database", "loopback needs no authentication")

	t.Setenv("DAGEN_UI_OPERATOR_PASSWORD", "correct horse")
	code, stderr = run("-addr", "0.0.0.0:0")
	require.Equal(t, ExitError, code)
	require.NotContains(t, stderr, "refusing")
	require.Contains(t, stderr, "clear text", "warns that passwords cross the network without TLS")
	require.Contains(t, stderr, "no database")

	t.Setenv("DAGEN_UI_OPERATOR_PASSWORD", "")
	code, stderr = run("-addr", "0.0.0.0:0", "-proxy-user-header", "X-Forwarded-User")
	require.Equal(t, ExitError, code)
	require.NotContains(t, stderr, "refusing")
	require.Contains(t, stderr, "no database")
}

func TestReadAccounts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "accounts")
	require.NoError(t, os.WriteFile(path, []byte("# who may use the console\nann operator two words\n\nbob viewer sha256:"+strings.Repeat("ab", 32)+"\n"), 0o600))
	var stderr strings.Builder
	accs, err := readAccounts(path, &stderr)
	require.NoError(t, err)
	require.Equal(t, []console.Account{
		{Name: "ann", Role: console.Operator, Password: "two words"},
		{Name: "bob", Role: console.Viewer, Password: "sha256:" + strings.Repeat("ab", 32)},
	}, accs)
	require.Empty(t, stderr.String())

	require.NoError(t, os.WriteFile(path, []byte("ann admin secret\n"), 0o644))
	require.NoError(t, os.Chmod(path, 0o644))
	_, err = readAccounts(path, &stderr)
	require.ErrorContains(t, err, "accounts:1: want")
	require.Contains(t, stderr.String(), "readable by others")
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true, "127.0.0.2:1": true,
		"0.0.0.0:8080": false, ":8080": false, "10.0.0.1:8080": false, "myhost:8080": false, "nonsense": false,
	} {
		require.Equal(t, want, loopback(addr), addr)
	}
}
