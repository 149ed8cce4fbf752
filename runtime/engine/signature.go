package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/dagenhq/dagen/runtime/store"
)

// A task signature says what a task reads and writes: its workflow's
// stored name, its own stored name and kind, the workflow input type, its
// output type and its parents' stored names with their output types. Two
// builds of a workflow whose step has the same signature hand that step the
// same data, so a task stored by one may be run by the other; a worker
// claims only the tasks whose signatures its registered definitions have.
// Retry, backoff, timeout, skip predicates and whether a parent is
// optional are policy, read from the running code: not part of it.
//
// A signature is 16 hex digits: the first 8 bytes of the SHA-256 of its
// canonical description (see [SignatureInfo.Canonical]).

// signatureVersion opens every canonical description, so a change of the
// scheme changes every signature rather than colliding with old ones.
const signatureVersion = "dagen.signature/1"

// Signatures returns the signature of every task of d's runs, by stored task
// name ([OnFailureStep] for the onfailure task). d should be valid.
func (d *Definition) Signatures() map[string]string {
	infos := d.SignatureInfos()
	out := make(map[string]string, len(infos))
	for _, si := range infos {
		out[si.Step] = si.Signature
	}
	return out
}

// SignatureInfos describes the signature of every task of d's runs, steps
// in definition order, then the onfailure task. d should be valid.
func (d *Definition) SignatureInfos() []store.SignatureInfo {
	outputs := make(map[string]string, len(d.Steps))
	for _, s := range d.Steps {
		outputs[s.Name] = s.outputAsParent()
	}
	infos := make([]store.SignatureInfo, 0, len(d.Steps)+1)
	for _, s := range d.Steps {
		si := store.SignatureInfo{
			Workflow: d.Name, Step: s.Name, Kind: s.taskKind(),
			Input: d.InputType, Output: s.OutputType, Each: s.Each,
		}
		if s.Kind == KindChild && s.Child != nil {
			si.Child = s.Child.Workflow + " " + s.Child.InputType + " " + s.Child.Result
		}
		for _, p := range s.Parents {
			si.Parents = append(si.Parents, store.SignatureParent{Name: p.Name, Type: outputs[p.Name], Optional: p.Optional})
		}
		si.Signature = Signature(si)
		infos = append(infos, si)
	}
	if d.OnFailure != nil {
		si := store.SignatureInfo{Workflow: d.Name, Step: OnFailureStep, Kind: store.KindOnFailure, Input: d.InputType}
		si.Signature = Signature(si)
		infos = append(infos, si)
	}
	return infos
}

// Signature computes the signature si describes; si.Signature is ignored.
// Parents are taken in name order: steps read them by name, so their order
// in after= does not matter.
func Signature(si store.SignatureInfo) string {
	sum := sha256.Sum256([]byte(canonical(si)))
	return hex.EncodeToString(sum[:8])
}

// canonical is the text a signature hashes: one line per field.
func canonical(si store.SignatureInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nworkflow %s\ntask %s %s\ninput %s\noutput %s\n", signatureVersion, si.Workflow, si.Step, si.Kind, si.Input, si.Output)
	if si.Each != "" {
		fmt.Fprintf(&b, "each %s\n", si.Each)
	}
	if si.Child != "" {
		fmt.Fprintf(&b, "child %s\n", si.Child)
	}
	parents := slices.Clone(si.Parents)
	slices.SortFunc(parents, func(a, b store.SignatureParent) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range parents {
		fmt.Fprintf(&b, "parent %s %s\n", p.Name, p.Type)
	}
	return b.String()
}

// taskKind is the kind of the step's task.
func (s *Step) taskKind() store.TaskKind {
	switch {
	case s.Kind == KindSleep:
		return store.KindSleep
	case s.Kind == KindSignal:
		return store.KindSignal
	case s.Each != "":
		return store.KindMap
	case s.Kind == KindChild:
		return store.KindChild
	}
	return store.KindStep
}

// outputAsParent is the type of the step's output as its children read it:
// a mapped step's is the slice of its elements' outputs.
func (s *Step) outputAsParent() string {
	if s.Each != "" && s.OutputType != "" {
		return "[]" + s.OutputType
	}
	return s.OutputType
}

// ServedSignatures returns the signatures a worker with d registered
// serves: its tasks' (in SignatureInfos order), then the legacy signature of
// runs created before signatures existed that have d's shape.
func (d *Definition) ServedSignatures() []string {
	infos := d.SignatureInfos()
	out := make([]string, 0, len(infos)+1)
	for _, si := range infos {
		out = append(out, si.Signature)
	}
	return append(out, legacySignature(d.Name, d.legacyFingerprint()))
}

// legacySignature is what migration 002 gave the unfinished tasks of runs
// created before signatures existed: the workflow and the fingerprint of
// its shape as it was then computed (legacyFingerprint). A worker serves it
// when its definition has that shape, which is the check those runs had.
func legacySignature(workflow, fingerprint string) string {
	return "legacy:" + workflow + ":" + fingerprint
}

// legacyFingerprint is Fingerprint as it was before signatures: a hash of
// step names, kinds and edges, without types.
func (d *Definition) legacyFingerprint() string {
	steps := make([]string, 0, len(d.Steps)+1)
	for _, s := range d.Steps {
		parents := make([]string, len(s.Parents))
		for i, p := range s.Parents {
			opt := ""
			if p.Optional {
				opt = "?"
			}
			parents[i] = p.Name + opt
		}
		steps = append(steps, fmt.Sprintf("%s/%d<%s", s.Name, s.Kind, strings.Join(parents, ",")))
	}
	slices.Sort(steps)
	if d.OnFailure != nil {
		steps = append(steps, OnFailureStep)
	}
	sum := sha256.Sum256([]byte(d.Name + "\n" + strings.Join(steps, "\n")))
	return hex.EncodeToString(sum[:8])
}

// Fingerprint is a short hash of the workflow as stored runs see it: its
// tasks' signatures (which cover names, kinds and types) and its edges,
// with whether each is optional. Runs record it; two builds with the same
// fingerprint run each other's runs alike but for policy (retries,
// timeouts, predicates).
func (d *Definition) Fingerprint() string {
	sigs := d.Signatures()
	lines := make([]string, 0, len(d.Steps)+1)
	for _, s := range d.Steps {
		parents := make([]string, len(s.Parents))
		for i, p := range s.Parents {
			parents[i] = p.Name
			if p.Optional {
				parents[i] += "?"
			}
		}
		slices.Sort(parents)
		lines = append(lines, fmt.Sprintf("%s %s <%s", s.Name, sigs[s.Name], strings.Join(parents, ",")))
	}
	if d.OnFailure != nil {
		lines = append(lines, OnFailureStep+" "+sigs[OnFailureStep])
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(d.Name + "\n" + strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:8])
}
