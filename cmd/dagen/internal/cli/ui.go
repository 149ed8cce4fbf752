package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/dagenhq/dagen/runtime/console"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/metrics"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// ui runs dagen ui: the console, served against the database until ctx
// ends (an interrupt).
func ui(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dagen ui", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	readOnly := fs.Bool("read-only", false, "refuse cancel and retry")
	db := fs.String("db", "", "database URL")
	schema := fs.String("schema", "", "schema")
	replica := fs.String("replica-db", "", "replica URL for reads")
	var af uiAuthFlags
	fs.StringVar(&af.file, "auth-file", "", "file of accounts: name role password")
	fs.StringVar(&af.proxyUser, "proxy-user-header", "", "trust this header for the user's name")
	fs.StringVar(&af.proxyRole, "proxy-role-header", "", "trust this header for the user's role")
	fs.BoolVar(&af.forwardProto, "trust-forwarded-proto", false, "Secure cookies when X-Forwarded-Proto is https")
	fs.DurationVar(&af.session, "session", 12*time.Hour, "how long a sign-in lasts")
	fs.StringVar(&af.tlsCert, "tls-cert", "", "serve HTTPS with this certificate")
	fs.StringVar(&af.tlsK, "tls-key", "", "and this key")
	var sf shardFlags
	addShardFlags(fs, &sf)
	topTenants := fs.Int("metrics-top-tenants", 10, "tenants the backlog gauges at /metrics name; the rest are \"other\"")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return ExitOK
		}
		fmt.Fprintf(stderr, "dagen ui: %v\nRun 'dagen --help' for usage.\n", err)
		return ExitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dagen ui: unexpected %q\n", fs.Arg(0))
		return ExitError
	}
	auth, err := af.auth(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "dagen ui: %v\n", err)
		return ExitError
	}
	if auth == nil && !loopback(*addr) {
		fmt.Fprintf(stderr, noAuth, *addr)
		return ExitError
	}
	if (af.tlsCert == "") != (af.tlsK == "") {
		fmt.Fprintf(stderr, "dagen ui: -tls-cert and -tls-key go together\n")
		return ExitError
	}
	if auth != nil && len(auth.Accounts) > 0 && af.tlsCert == "" && !af.forwardProto && !loopback(*addr) {
		fmt.Fprintf(stderr, "dagen ui: warning: passwords and session cookies cross the network in clear text: serve HTTPS (-tls-cert, -tls-key) or behind a TLS proxy (-trust-forwarded-proto)\n")
	}
	opts := console.Options{ReadOnly: *readOnly, Operator: "console (" + cmp.Or(os.Getenv("USER"), "unknown") + ")", Auth: auth}
	var cst store.Store
	var st *pgstore.Store
	if sf = sf.withEnv(); sf.shards != "" && *db == "" {
		// Every shard as one system: pages merged by run id, counts
		// added up.
		if replicaURL(*replica) != "" {
			fmt.Fprintf(stderr, "dagen ui: -replica-db reads one database: with shards, leave it out\n")
			return ExitError
		}
		sharded, closeAll, err := openSharded(ctx, sf, *schema)
		if err != nil {
			fmt.Fprintf(stderr, "dagen ui: %v\n", err)
			return ExitError
		}
		defer closeAll()
		cst = sharded
	} else {
		url, code := databaseURL(*db, "ui", stderr)
		if code != ExitOK {
			return code
		}
		pool, err := connect(ctx, url, *schema)
		if err != nil {
			fmt.Fprintf(stderr, "dagen ui: %v\n", err)
			return ExitError
		}
		defer pool.Close()
		if st, err = pgstore.New(ctx, pool, nil); err != nil {
			fmt.Fprintf(stderr, "dagen ui: %v\n", err)
			return ExitError
		}
		cst = st
	}
	reads := ""
	if u := replicaURL(*replica); u != "" && st != nil {
		rep, rpool, err := replicated(st, u, *schema)
		if err != nil {
			fmt.Fprintf(stderr, "dagen ui: %v\n", err)
			return ExitError
		}
		defer rpool.Close()
		cst, opts.Source = rep, rep.Source
		reads = ", reading from the replica"
		if src := rep.Source(ctx); src.Fallback != "" {
			fmt.Fprintf(stderr, "dagen ui: %s\n", src)
		}
	}
	h, err := console.New(cst, opts)
	if err != nil {
		fmt.Fprintf(stderr, "dagen ui: %v\n", err)
		return ExitError
	}
	// The console and, at /metrics, the backlog gauges for Prometheus:
	// dagen ui runs no worker, so it reports what it reads from the store.
	mh, mp, err := metrics.NewPrometheus()
	if err != nil {
		fmt.Fprintf(stderr, "dagen ui: %v\n", err)
		return ExitError
	}
	defer func() { _ = mp.Shutdown(context.WithoutCancel(ctx)) }()
	if _, err := engine.ObserveBacklog(mp, cst, *topTenants); err != nil {
		fmt.Fprintf(stderr, "dagen ui: metrics: %v\n", err)
		return ExitError
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", mh)
	mux.Handle("/", h)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "dagen ui: %v\n", err)
		return ExitError
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	mode := ""
	if *readOnly {
		mode = " (read-only)"
	}
	switch {
	case auth != nil && len(auth.Accounts) > 0:
		mode += ", with sign-in"
	case auth != nil:
		mode += ", users from " + auth.ProxyUserHeader
	}
	scheme := "http"
	if af.tlsCert != "" {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "dagen ui: serving the console%s on %s://%s/%s, metrics at /metrics\n", mode, scheme, ln.Addr(), reads)
	done := make(chan error, 1)
	go func() {
		if af.tlsCert != "" {
			done <- srv.ServeTLS(ln, af.tlsCert, af.tlsK)
			return
		}
		done <- srv.Serve(ln)
	}()
	select {
	case err := <-done:
		fmt.Fprintf(stderr, "dagen ui: %v\n", err)
		return ExitError
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		return ExitOK
	}
}
