package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dagenhq/dagen/gen/gentest"
)

// shopSource is the annotated package of the user module.
const shopSource = `// Package shop is a user's package with one workflow.
package shop

//go:generate go tool dagen

import (
	"context"
	"fmt"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Cart is the input of the Cart workflow.
//
//dag:workflow
type Cart struct {
	Prices []int64 // in cents
	Coupon string
}

// Total adds the prices up.
//
//dag:step
func Total(ctx context.Context, c Cart) (int64, error) {
	var sum int64
	for _, p := range c.Prices {
		sum += p
	}
	return sum, nil
}

// Discount takes a tenth off a cart with a coupon.
//
//dag:step after=Total skip=noCoupon
func Discount(ctx context.Context, c Cart, total int64) (int64, error) {
	return total / 10, nil
}

// Charge charges the total less the discount, if any.
//
//dag:step after=Total,Discount
func Charge(ctx context.Context, c Cart, total int64, off dag.Maybe[int64]) (string, error) {
	return fmt.Sprintf("charged %d", total-off.OrElse(0)), nil
}

func noCoupon(c Cart) bool { return c.Coupon == "" }
`

// mainSource runs the workflow on the in-memory store and prints results.
const mainSource = `// Command shop runs two carts through the Cart workflow in memory.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"example.com/shop"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

func main() {
	ctx := context.Background()
	e, err := engine.New(memstore.New(nil), &engine.Config{PollInterval: 5 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	wf, err := shop.NewCartWorkflow(e)
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer e.Stop(ctx)
	for _, c := range []shop.Cart{{Prices: []int64{1000, 3200}, Coupon: "TENOFF"}, {Prices: []int64{500}}} {
		res, err := wf.Run(ctx, "tenant-1", c)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("total %d, discount %v, %s\n", res.Total, res.Discount.Ok(), res.Charge)
	}
}
`

// TestInstallAsTool installs dagen in a throwaway user module the way the
// README's Install section says, through the module's tool directive, and
// runs a workflow generated with it. The module requires this checkout
// through a replace directive. Even with the replace, go get asks the
// module proxy whether github.com/dagenhq/dagen/cmd/dagen is a module of
// its own; a proxy that refuses (rather than answering "not found") would
// stop it, so the environment's proxies are tried and then "off", which
// answers without the network (see moduleProxies). go.sum comes from the
// checkout, so no checksum database is asked either.
func TestInstallAsTool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a throwaway module with the go command")
	}
	root := gentest.RepoRoot(t)
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"go.mod":           "module example.com/shop\n\ngo 1.26.0\n\nreplace " + gentest.ModulePath + " => " + root + "\n",
		"go.sum":           string(sum),
		"shop.go":          shopSource,
		"cmd/shop/main.go": mainSource,
	} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	goEnv := exec.CommandContext(t.Context(), "go", "env", "GOFLAGS", "GOPROXY")
	vars, err := goEnv.Output()
	if err != nil {
		t.Fatalf("go env GOFLAGS GOPROXY: %v", err)
	}
	flags, proxy, _ := strings.Cut(string(vars), "\n")
	// The environment's GOMODCACHE, and its GOFLAGS plus -mod=mod so that
	// go.mod and go.sum may gain what the build needs.
	env := append(os.Environ(),
		"GOFLAGS="+strings.TrimSpace(flags+" -mod=mod"),
		"GOPROXY="+moduleProxies(strings.TrimSpace(proxy)), "GOWORK=off", "GOTOOLCHAIN=local")
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Dir = dir
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	goCmd("get", "-tool", gentest.ModulePath+"/cmd/dagen")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "\ntool "+gentest.ModulePath+"/cmd/dagen\n") {
		t.Fatalf("go get -tool left no tool directive:\n%s", mod)
	}
	if out := goCmd("generate", "./..."); !strings.Contains(out, "dagen: wrote dag_gen.go") {
		t.Fatalf("go generate did not write dag_gen.go:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "dag_gen.go")); err != nil {
		t.Fatal(err)
	}
	goCmd("tool", "dagen", "diff", "./...") // exits 0: dag_gen.go is fresh
	goCmd("build", "./...")
	goCmd("vet", "./...")
	out := goCmd("run", "./cmd/shop")
	const want = "total 4200, discount true, charged 3780\ntotal 500, discount false, charged 500\n"
	if out != want {
		t.Errorf("go run ./cmd/shop printed\n%s\nwant\n%s", out, want)
	}
}

// moduleProxies turns a GOPROXY list into one that falls through on any
// error ("|") and ends with "off": the proxies still serve the modules the
// cache lacks, and a refusal to look up this unpublished module ends in
// "off" instead of failing go get. "direct" is dropped: it would need the
// network beyond the proxy.
func moduleProxies(goproxy string) string {
	var out []string
	for _, p := range strings.FieldsFunc(goproxy, func(r rune) bool { return r == ',' || r == '|' }) {
		if p != "direct" && p != "off" {
			out = append(out, p)
		}
	}
	return strings.Join(append(out, "off"), "|")
}
