package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dagenhq/dagen/gen"
	"github.com/dagenhq/dagen/internal/analysis"
	"github.com/dagenhq/dagen/internal/textfmt"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// checkSample is how many run ids dagen check -db shows per workflow and per
// task.
const checkSample = 3

// checkDBFlags are the flags of dagen check that compare with a database.
type checkDBFlags struct {
	db, schema   string
	shards       string // check every shard, as one store (-shards)
	strict, json bool
}

// deployReport is what dagen check -db finds: the RUNNING runs of a
// database that code built from the packages could not finish, and why.
type deployReport struct {
	Schema    string           `json:"schema"`
	Runs      int              `json:"runs"`     // RUNNING runs
	Stranded  int              `json:"stranded"` // of them, the ones this code could not finish
	Workflows []workflowReport `json:"workflows"`
}

// workflowReport is one workflow of a deployReport: its stranded runs and
// the tasks they wait on.
type workflowReport struct {
	Workflow string       `json:"workflow"`
	InCode   bool         `json:"in_code"`
	Runs     int          `json:"runs"`
	Stranded int          `json:"stranded"`
	Sample   []string     `json:"sample_runs"`
	Tasks    []taskReport `json:"tasks"`
}

// taskReport is a stored task signature the code does not serve, with why.
type taskReport struct {
	Step      string   `json:"step"`
	Signature string   `json:"signature"`
	Runs      int      `json:"runs"`
	Sample    []string `json:"sample_runs"`
	Reasons   []string `json:"reasons"`
}

// checkDB compares the signatures of the workflows in pkgs with the
// unfinished tasks of the database and prints which runs this code could
// not finish. With strict, finding any is ExitFailure.
func checkDB(ctx context.Context, pkgs []*analysis.Package, f checkDBFlags, stdout, stderr io.Writer) int {
	if f.shards != "" {
		return checkShards(ctx, pkgs, f, stdout, stderr)
	}
	url, code := databaseURL(f.db, "check", stderr)
	if code != ExitOK {
		return code
	}
	pool, err := connect(ctx, url, f.schema)
	if err != nil {
		fmt.Fprintf(stderr, "dagen check: %v\n", err)
		return ExitError
	}
	defer pool.Close()
	st, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		fmt.Fprintf(stderr, "dagen check: %v\n", err)
		return ExitError
	}
	status, err := pgstore.MigrationStatus(ctx, pool)
	if err != nil {
		fmt.Fprintf(stderr, "dagen check: %v\n", err)
		return ExitError
	}
	return reportDeploy(ctx, st, status.Schema, codeSignatures(pkgs), f, stdout, stderr)
}

// reportDeploy prints what the code would strand of the runs in flight in
// d (one database or every shard, named by where), and returns the exit
// code: ExitFailure for runs stranded under -strict.
func reportDeploy(ctx context.Context, d store.Deploys, where string, code codeSigs, f checkDBFlags, stdout, stderr io.Writer) int {
	rep, err := d.InFlight(ctx, code.served, checkSample)
	if err != nil {
		fmt.Fprintf(stderr, "dagen check: %v\n", err)
		return ExitError
	}
	report := compareDeploy(where, rep, code)
	if f.json {
		printJSON(stdout, report)
	} else {
		printDeploy(stdout, report)
	}
	if f.strict && report.Stranded > 0 {
		return ExitFailure
	}
	return ExitOK
}

// checkShards is checkDB over every shard of a sharded deployment: the
// runs in flight of all of them, as one report.
func checkShards(ctx context.Context, pkgs []*analysis.Package, f checkDBFlags, stdout, stderr io.Writer) int {
	if f.db != "" {
		fmt.Fprintf(stderr, "dagen check: %v\n", errShardsAndDB)
		return ExitError
	}
	sf := shardFlags{shards: f.shards}.withEnv()
	st, closeAll, err := openSharded(ctx, sf, f.schema)
	if err != nil {
		fmt.Fprintf(stderr, "dagen check: %v\n", err)
		return ExitError
	}
	defer closeAll()
	var names []string
	for _, sh := range st.Shards() {
		names = append(names, sh.Name)
	}
	return reportDeploy(ctx, st, "shards "+strings.Join(names, ","), codeSignatures(pkgs), f, stdout, stderr)
}

// codeSigs is what the packages' code serves.
type codeSigs struct {
	served []string
	// steps holds the signature description of each task, by workflow and
	// stored task name.
	steps map[string]map[string]store.SignatureInfo
}

func codeSignatures(pkgs []*analysis.Package) codeSigs {
	c := codeSigs{steps: make(map[string]map[string]store.SignatureInfo)}
	for _, p := range pkgs {
		for _, w := range p.Workflows {
			def := gen.Skeleton(w)
			c.served = append(c.served, def.ServedSignatures()...)
			steps := make(map[string]store.SignatureInfo)
			for _, si := range def.SignatureInfos() {
				steps[si.Step] = si
			}
			c.steps[w.Name] = steps
		}
	}
	slices.Sort(c.served)
	return c
}

// compareDeploy builds the report: per workflow with stranded runs, the
// unserved signatures and why the code does not serve them.
func compareDeploy(schema string, rep store.InFlightReport, code codeSigs) deployReport {
	out := deployReport{Schema: schema, Workflows: []workflowReport{}}
	byWorkflow := map[string]*workflowReport{}
	for _, w := range rep.Workflows {
		out.Runs += w.Runs
		out.Stranded += w.Stranded
		if w.Stranded == 0 {
			continue
		}
		_, inCode := code.steps[w.Workflow]
		out.Workflows = append(out.Workflows, workflowReport{
			Workflow: w.Workflow, InCode: inCode, Runs: w.Runs, Stranded: w.Stranded,
			Sample: idStrings(w.Sample), Tasks: []taskReport{},
		})
	}
	for i := range out.Workflows {
		byWorkflow[out.Workflows[i].Workflow] = &out.Workflows[i]
	}
	for _, f := range rep.Signatures {
		w := byWorkflow[f.Workflow]
		if f.Served || w == nil {
			continue
		}
		w.Tasks = append(w.Tasks, taskReport{
			Step: f.Step, Signature: f.Signature, Runs: f.Runs, Sample: idStrings(f.Sample),
			Reasons: explain(f, code.steps[f.Workflow]),
		})
	}
	return out
}

// explain says why code whose workflow has these tasks (nil: the workflow
// is not in the code) cannot run a stored task of signature f.
func explain(f store.InFlight, steps map[string]store.SignatureInfo) []string {
	if strings.HasPrefix(f.Signature, "legacy:") {
		return []string{"created before task signatures (schema version 2) by code whose DAG (step names and edges) differs from this code's; finish it with the old build"}
	}
	if steps == nil {
		return []string{fmt.Sprintf("workflow %s is not in these packages", f.Workflow)}
	}
	old := f.Info
	now, ok := steps[f.Step]
	if !ok {
		if old == nil {
			return []string{fmt.Sprintf("step %s is not in this code: it was removed, or renamed without name= (write name=%s on the renamed step's directive to keep serving it)", f.Step, f.Step)}
		}
		if to := renamedTo(*old, steps); to != "" {
			return []string{fmt.Sprintf("step %s was renamed to %s without name=: write name=%s on %s's directive to keep serving these runs", f.Step, to, f.Step, to)}
		}
		return []string{fmt.Sprintf("step %s was removed", f.Step)}
	}
	if old == nil {
		return []string{fmt.Sprintf("its signature changed, to %s; the old build recorded no description of %s, so this cannot say how", now.Signature, f.Signature)}
	}
	var why []string
	if old.Kind != now.Kind {
		why = append(why, fmt.Sprintf("it was a %s and is now a %s", old.Kind, now.Kind))
	}
	if old.Input != now.Input {
		why = append(why, fmt.Sprintf("the workflow input type changed from %s to %s", typeName(old.Input), typeName(now.Input)))
	}
	if old.Output != now.Output {
		why = append(why, fmt.Sprintf("its output type changed from %s to %s", typeName(old.Output), typeName(now.Output)))
	}
	if old.Child != now.Child {
		why = append(why, fmt.Sprintf("the child run it starts changed from %q to %q (workflow, input type, result step)", old.Child, now.Child))
	}
	oldParents := parentTypes(old.Parents)
	for _, p := range now.Parents {
		t, had := oldParents[p.Name]
		switch {
		case !had:
			why = append(why, fmt.Sprintf("parent %s was added: the stored task has no %s to read", p.Name, p.Name))
		case t != p.Type:
			why = append(why, fmt.Sprintf("parent %s's output type changed from %s to %s", p.Name, typeName(t), typeName(p.Type)))
		}
	}
	nowParents := parentTypes(now.Parents)
	for _, p := range old.Parents {
		if _, has := nowParents[p.Name]; !has {
			why = append(why, fmt.Sprintf("parent %s was removed", p.Name))
		}
	}
	if len(why) == 0 {
		why = append(why, fmt.Sprintf("its signature changed from %s to %s", f.Signature, now.Signature))
	}
	return why
}

// renamedTo returns the name of the step of the code that reads and writes
// what old did but has another name, and is not a step old's workflow had.
func renamedTo(old store.SignatureInfo, steps map[string]store.SignatureInfo) string {
	var names []string
	for name, si := range steps {
		if si.Kind == old.Kind && si.Output == old.Output && si.Input == old.Input && si.Child == old.Child &&
			slices.Equal(sortedParents(si.Parents), sortedParents(old.Parents)) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) == 1 {
		return names[0]
	}
	return ""
}

func sortedParents(ps []store.SignatureParent) []store.SignatureParent {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b store.SignatureParent) int { return strings.Compare(a.Name, b.Name) })
	return ps
}

func parentTypes(ps []store.SignatureParent) map[string]string {
	m := make(map[string]string, len(ps))
	for _, p := range ps {
		m[p.Name] = p.Type
	}
	return m
}

// typeName is a type id for messages: "no value" for none.
func typeName(t string) string {
	if t == "" {
		return "no value"
	}
	return t
}

func idStrings(ids []dag.RunID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// printDeploy prints the report for people: a summary line, then per
// workflow the runs this code could not finish and, per task, why.
func printDeploy(w io.Writer, r deployReport) {
	schema := "the database's schema"
	if r.Schema != "" {
		schema = fmt.Sprintf("schema %s", r.Schema)
	}
	if r.Stranded == 0 {
		fmt.Fprintf(w, "%s: this code can finish all %d running runs\n", schema, r.Runs)
		return
	}
	fmt.Fprintf(w, "%s: this code could not finish %d of %d running runs\n", schema, r.Stranded, r.Runs)
	for _, wf := range r.Workflows {
		fmt.Fprintf(w, "\nworkflow %s: %d of %d running runs (%s)\n", wf.Workflow, wf.Stranded, wf.Runs, sampleText(wf.Sample, wf.Stranded))
		for _, t := range wf.Tasks {
			fmt.Fprintf(w, "  %s (signature %s): %s\n", t.Step, t.Signature, textfmt.Count(t.Runs, "run"))
			for _, why := range t.Reasons {
				fmt.Fprintf(w, "    - %s\n", why)
			}
		}
	}
	fmt.Fprintf(w, "\nThese runs wait, not fail, for a worker that serves them: keep a worker of the old build\nuntil they finish, or keep the old names with name=.\n")
}

func sampleText(ids []string, n int) string {
	s := strings.Join(ids, ", ")
	if n > len(ids) {
		s += ", …"
	}
	return s
}
