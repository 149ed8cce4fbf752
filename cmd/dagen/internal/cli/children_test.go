package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dagenhq/dagen/cmd/dagen/internal/cli"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// childRuns is a database seeded with child runs, built with hand-made
// definitions as generated code would register them: workflow checkout
// runs shipping as the child of its step ship; workflow waiter runs nap,
// which sleeps an hour, as the child of its step hold.
type childRuns struct {
	schema string
	// parent is a checkout run whose ship failed at attempt 1 (its child
	// failed) and completed at attempt 2 after a retry: first and second
	// are its children.
	parent, first, second dag.RunID
	// plain is a shipping run started by a trigger, not a parent.
	plain dag.RunID
	// waiting is a waiter run whose hold waits, AWAITING, for its child
	// napping.
	waiting, napping dag.RunID
}

func seedChildRuns(t *testing.T) childRuns {
	t.Helper()
	ctx := context.Background()
	schema := pgtest.Schema(t)
	pool := pgtest.Pool(t, schema, 4)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(st, &engine.Config{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	var broken atomic.Bool // shipping fails while set
	broken.Store(true)
	passInput := func(_ context.Context, in engine.StepInput) ([]byte, error) {
		n, err := engine.Input[int](in)
		if err != nil {
			return nil, err
		}
		return engine.Encode(n)
	}
	for _, def := range []*engine.Definition{
		{Name: "shipping", Steps: []engine.Step{{Name: "label", OutputType: "string", Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
			if broken.Load() {
				return nil, dag.Terminal(errors.New("no carrier today"))
			}
			return engine.Encode("label")
		}}}},
		{Name: "checkout", Steps: []engine.Step{
			{Name: "ship", Kind: engine.KindChild, OutputType: "string", Child: &engine.Child{Workflow: "shipping", Result: "label"}, Run: passInput},
		}},
		{Name: "nap", Steps: []engine.Step{{Name: "zz", Kind: engine.KindSleep, Sleep: func(context.Context, engine.StepInput) (engine.Wake, error) {
			return engine.Wake{Delay: time.Hour}, nil
		}}}},
		{Name: "waiter", Steps: []engine.Step{
			{Name: "hold", Kind: engine.KindChild, Child: &engine.Child{Workflow: "nap"}, Run: passInput},
		}},
	} {
		if err := e.Register(def); err != nil {
			t.Fatal(err)
		}
	}
	var s childRuns
	s.schema = schema
	children := func(id dag.RunID) []store.ChildRun {
		t.Helper()
		kids, err := st.ListChildren(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return kids
	}
	if s.parent, err = e.Trigger(ctx, "checkout", "acme", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, s.parent); !errors.Is(err, engine.ErrRunFailed) {
		t.Fatalf("checkout with shipping broken: %v", err)
	}
	broken.Store(false)
	rt, err := store.ParseRetryMode("failed")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RetryRun(ctx, s.parent, rt); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, s.parent); err != nil {
		t.Fatalf("checkout retried: %v", err)
	}
	kids := children(s.parent)
	if len(kids) != 2 || kids[0].Attempt != 1 || kids[1].Attempt != 2 {
		t.Fatalf("checkout's children: %+v", kids)
	}
	s.first, s.second = kids[0].ID, kids[1].ID
	if s.plain, err = e.Trigger(ctx, "shipping", "acme", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, s.plain); err != nil {
		t.Fatal(err)
	}
	if s.waiting, err = e.Trigger(ctx, "waiter", "acme", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, s.waiting); !errors.Is(err, engine.ErrRunBlocked) {
		t.Fatalf("waiter: %v, want it blocked on its napping child", err)
	}
	if kids := children(s.waiting); len(kids) != 1 {
		t.Fatalf("waiter's children: %+v", kids)
	} else {
		s.napping = kids[0].ID
	}
	return s
}

// TestRunsShowChildren: runs show lists the child runs a step started,
// the latest attempt's first, says what an AWAITING child step waits for,
// and shows a child run's parent; -json and -graph carry the same.
func TestRunsShowChildren(t *testing.T) {
	t.Parallel()
	s := seedChildRuns(t)

	out, _ := runsCmd(t, cli.ExitOK, s.schema, "show", s.parent.String())
	for _, re := range []string{
		`(?m)^ship +- +COMPLETED +2 `,
		`(?m)^child runs \(latest attempt first; dagen runs show ID shows one\):\nSTEP +ATTEMPT +RUN +WORKFLOW +STATUS\n` +
			`ship +2 +` + s.second.String() + ` +shipping +COMPLETED\n` +
			`ship +1 \(earlier\) +` + s.first.String() + ` +shipping +FAILED\n`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("show parent: no %s in\n%s", re, out)
		}
	}
	if strings.Contains(out, "parent: ") {
		t.Errorf("show parent: a run a trigger started has no parent:\n%s", out)
	}

	out, _ = runsCmd(t, cli.ExitOK, s.schema, "show", s.second.String())
	if want := "parent: " + s.parent.String() + " step ship (attempt 2)\n"; !strings.Contains(out, want) {
		t.Errorf("show child: no %q in\n%s", want, out)
	}
	if strings.Contains(out, "child runs") {
		t.Errorf("show child: it started no children:\n%s", out)
	}

	out, _ = runsCmd(t, cli.ExitOK, s.schema, "show", s.waiting.String())
	if re := `(?m)^hold +- +AWAITING +1 +\S+ +waiting for its child run ` + s.napping.String() + ` \(nap, RUNNING\)$`; !regexp.MustCompile(re).MatchString(out) {
		t.Errorf("show waiting parent: no %s in\n%s", re, out)
	}

	out, _ = runsCmd(t, cli.ExitOK, s.schema, "show", "-graph", s.parent.String())
	if want := `t0["ship (runs shipping) · completed"]:::completed`; !strings.Contains(out, want) {
		t.Errorf("show -graph: no %q in\n%s", want, out)
	}

	type child struct {
		ID, Workflow, Status string
		Attempt              int
		FinishedAt           *time.Time `json:"finished_at"`
	}
	var parent struct {
		ID     string `json:"id"`
		Parent *struct{ Run, Step string }
		Tasks  []struct {
			Name     string
			Attempt  int
			Children []child
		}
	}
	out, _ = runsCmd(t, cli.ExitOK, s.schema, "show", "-json", s.parent.String())
	if err := json.Unmarshal([]byte(out), &parent); err != nil {
		t.Fatalf("show -json: %v\n%s", err, out)
	}
	if parent.ID != s.parent.String() || parent.Parent != nil || len(parent.Tasks) != 1 || parent.Tasks[0].Name != "ship" {
		t.Fatalf("show -json parent:\n%s", out)
	}
	got := parent.Tasks[0].Children
	if len(got) != 2 || got[0].ID != s.second.String() || got[0].Attempt != 2 || got[0].Status != "COMPLETED" || got[0].Workflow != "shipping" ||
		got[1].ID != s.first.String() || got[1].Attempt != 1 || got[1].Status != "FAILED" || got[1].FinishedAt == nil {
		t.Errorf("show -json: ship's children, latest attempt first:\n%s", out)
	}
	var kid struct {
		ID     string `json:"id"`
		Parent *struct {
			Run, Step string
			Attempt   int
		}
	}
	out, _ = runsCmd(t, cli.ExitOK, s.schema, "show", "-json", s.first.String())
	if err := json.Unmarshal([]byte(out), &kid); err != nil {
		t.Fatalf("show -json: %v\n%s", err, out)
	}
	if kid.ID != s.first.String() || kid.Parent == nil || kid.Parent.Run != s.parent.String() || kid.Parent.Step != "ship" || kid.Parent.Attempt != 1 {
		t.Errorf("show -json child: its parent:\n%s", out)
	}
}

// TestRunsLsChildren: -children only lists the runs a parent's step
// started, none the others, all (the default) both; another value is an
// error saying the allowed ones.
func TestRunsLsChildren(t *testing.T) {
	t.Parallel()
	s := seedChildRuns(t)
	ids := func(out string) []string { return regexp.MustCompile(`(?m)^[0-9a-f-]{36}`).FindAllString(out, -1) }
	runs := map[string]string{s.parent.String(): "parent", s.first.String(): "first", s.second.String(): "second",
		s.plain.String(): "plain", s.waiting.String(): "waiting", s.napping.String(): "napping"}
	names := func(out string) string {
		var ns []string
		for _, id := range ids(out) {
			ns = append(ns, runs[id])
		}
		return strings.Join(ns, " ")
	}
	for _, tc := range []struct{ flag, want string }{
		{"", "napping waiting plain second first parent"},
		{"all", "napping waiting plain second first parent"},
		{"only", "napping second first"},
		{"none", "waiting plain parent"},
	} {
		args := []string{"ls"}
		if tc.flag != "" {
			args = append(args, "-children", tc.flag)
		}
		out, _ := runsCmd(t, cli.ExitOK, s.schema, args...)
		if got := names(out); got != tc.want {
			t.Errorf("ls -children %q lists %s, want %s\n%s", tc.flag, got, tc.want, out)
		}
	}
	out, _ := runsCmd(t, cli.ExitOK, s.schema, "ls", "-children", "only", "-status", "failed", "-json")
	var page struct {
		Runs []struct{ ID string } `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil || len(page.Runs) != 1 || page.Runs[0].ID != s.first.String() {
		t.Errorf("ls -children only -status failed -json (%v):\n%s", err, out)
	}
	_, errOut := runsCmd(t, cli.ExitError, s.schema, "ls", "-children", "some")
	if !strings.Contains(errOut, `-children "some": want all, only`) || !strings.Contains(errOut, "or none") {
		t.Errorf("bad -children: %s", errOut)
	}
}
