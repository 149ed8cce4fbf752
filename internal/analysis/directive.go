package analysis

import (
	"go/ast"
	"go/token"
	"slices"
	"strconv"
	"strings"
)

// Directive names.
const (
	dirWorkflow  = "workflow"
	dirStep      = "step"
	dirChild     = "child"
	dirSleep     = "sleep"
	dirSignal    = "signal"
	dirSchedule  = "schedule"
	dirOnFailure = "onfailure"
	dirRateLimit = "ratelimit"
)

// directivePrefix starts every directive. Like //go: directives, there is no
// space after the slashes.
const directivePrefix = "//dag:"

// directiveNames lists the directives in the order they are documented.
func directiveNames() []string {
	return []string{dirWorkflow, dirStep, dirChild, dirSleep, dirSignal, dirSchedule, dirOnFailure, dirRateLimit}
}

// directiveKeys returns the keys a directive accepts, and false for an
// unknown directive.
func directiveKeys(name string) ([]string, bool) {
	switch name {
	case dirWorkflow:
		return []string{"name", "key", "concurrency", "per", "timeout", "result", "priority"}, true
	case dirStep:
		return []string{"after", "skip", "each", "limit", "retry", "backoff", "maxbackoff", "timeout", "name", "ratelimit", "units", "per"}, true
	case dirChild:
		return []string{"after", "skip", "each", "limit", "retry", "backoff", "maxbackoff", "timeout", "name"}, true
	case dirSleep:
		return []string{"after", "name"}, true
	case dirSignal:
		return []string{"after", "timeout", "name"}, true
	case dirSchedule:
		return []string{"cron", "zone", "tenant", "catchup", "name"}, true
	case dirOnFailure:
		return nil, true
	case dirRateLimit:
		return []string{"rate", "burst"}, true
	}
	return nil, false
}

// directive is one //dag:NAME line with its arguments.
type directive struct {
	Name    string
	Pos     token.Pos // the first slash
	NameEnd token.Pos // just past NAME
	Args    []arg
}

// arg is one key=value argument. Positions are exact, so diagnostics point
// at the key or value they are about.
type arg struct {
	Key      string
	KeyPos   token.Pos
	Value    string // unquoted
	ValuePos token.Pos
	End      token.Pos
	Quoted   bool
}

// item is one element of a comma-separated list value.
type item struct {
	Text     string
	Pos, End token.Pos
}

// items splits a list value on commas, keeping each element's position.
// Elements are reported even when empty, so the caller can complain.
func (a arg) items() []item {
	var out []item
	start := 0
	offset := a.ValuePos
	if a.Quoted {
		offset++ // past the opening quote; exact unless the value has escapes
	}
	for i := 0; i <= len(a.Value); i++ {
		if i == len(a.Value) || a.Value[i] == ',' {
			from, to := start, i
			if !a.Quoted {
				// Spaces can only be there after a SpacedList error,
				// which has said all there is to say about them.
				for from < to && isSpace(a.Value[from]) {
					from++
				}
				for to > from && isSpace(a.Value[to-1]) {
					to--
				}
			}
			out = append(out, item{
				Text: a.Value[from:to],
				Pos:  offset + token.Pos(from),
				End:  offset + token.Pos(to),
			})
			start = i + 1
		}
	}
	return out
}

// syntaxError is a problem found while tokenizing a directive.
type syntaxError struct {
	Pos, End token.Pos
	Code     Code
	Msg      string
}

// parseDirective tokenizes a comment that starts with //dag:. It returns the
// directive, with every argument it could read, and the syntax errors it
// found on the way; it never gives up on the whole line for one bad
// argument.
func parseDirective(c *ast.Comment) (*directive, []syntaxError) {
	text := c.Text
	at := func(i int) token.Pos { return c.Slash + token.Pos(i) }
	i := len(directivePrefix)
	j := i
	for j < len(text) && !isSpace(text[j]) {
		j++
	}
	d := &directive{Name: text[i:j], Pos: c.Slash, NameEnd: at(j)}
	keys, _ := directiveKeys(d.Name)
	var errs []syntaxError
	bad := func(from, to int, code Code, msg string) {
		errs = append(errs, syntaxError{Pos: at(from), End: at(to), Code: code, Msg: msg})
	}
	i = j
	for {
		for i < len(text) && isSpace(text[i]) {
			i++
		}
		if i >= len(text) {
			break
		}
		start := i
		for i < len(text) && !isSpace(text[i]) && text[i] != '=' && text[i] != '"' && text[i] != '`' {
			i++
		}
		key := text[start:i]
		if i >= len(text) || text[i] != '=' {
			// Skip the rest of this word, quoted parts included, and go on.
			end := skipWord(text, i)
			word := text[start:end]
			msg := "malformed argument " + strconv.Quote(word) + ": want key=value"
			if slices.Contains(keys, key) {
				msg += ", as in " + key + "=…"
			}
			bad(start, end, MalformedDirective, msg)
			i = end
			continue
		}
		if key == "" {
			end := skipWord(text, i)
			bad(start, end, MalformedDirective, "argument "+strconv.Quote(text[start:end])+" has no key before =")
			i = end
			continue
		}
		i++ // past '='
		a := arg{Key: key, KeyPos: at(start), ValuePos: at(i)}
		if i < len(text) && (text[i] == '"' || text[i] == '`') {
			quoted, err := strconv.QuotedPrefix(text[i:])
			if err != nil {
				end := skipWord(text, i)
				bad(i, end, MalformedDirective, "value of "+key+" is not a valid Go quoted string")
				i = end
				continue
			}
			v, err := strconv.Unquote(quoted)
			if err != nil { // QuotedPrefix accepted it, so this cannot happen; be safe anyway
				bad(i, i+len(quoted), MalformedDirective, "value of "+key+" is not a valid Go quoted string")
				i += len(quoted)
				continue
			}
			a.Value, a.Quoted = v, true
			i += len(quoted)
			if i < len(text) && !isSpace(text[i]) {
				end := skipWord(text, i)
				bad(i, end, MalformedDirective, "unexpected "+strconv.Quote(text[i:end])+" after the quoted value of "+key+": separate arguments with a space")
				i = end
			}
		} else {
			vstart := i
			for i < len(text) && !isSpace(text[i]) {
				i++
			}
			if isListKey(key) {
				if end, gap := spacedList(text, vstart, i); end > i {
					// One mistake, one error: the words after the spaces
					// are the rest of the list, not arguments of their own.
					fixed := strings.Join(strings.Fields(text[vstart:end]), "")
					bad(gap, end, SpacedList, "spaces in the list "+key+"=: lists are comma-separated without spaces; write "+key+"="+fixed)
					i = end
				}
			}
			if key == "cron" && d.Name == dirSchedule {
				if end := bareWords(text, i); end > i {
					// cron=0 3 * * *: the fields after the first are the
					// rest of the expression, not arguments of their own.
					// Read it whole, so that it is checked as written.
					expr := strings.Join(strings.Fields(text[vstart:end]), " ")
					bad(vstart, end, MalformedDirective, "the value of cron= has spaces: quote it, as in cron="+strconv.Quote(expr))
					a.Value, a.End = expr, at(end)
					i = end
					d.Args = append(d.Args, a)
					continue
				}
			}
			a.Value = text[vstart:i]
			if strings.ContainsAny(a.Value, "\"`") {
				bad(vstart, i, MalformedDirective, "value of "+key+" has a quote inside it: quote the whole value, as in "+key+"=\"…\"")
				continue
			}
		}
		a.End = at(i)
		d.Args = append(d.Args, a)
	}
	return d, errs
}

// isListKey reports whether a key takes a comma-separated list.
func isListKey(key string) bool { return key == "after" || key == "skip" }

// spacedList looks past the unquoted list value text[start:end] for
// words that continue it across spaces, as in "after=A, B" or "after=A ,B":
// a word is taken when the value so far ends with a comma or the word
// starts with one, and it is not an argument of its own (no = or quote).
// It returns the end of the last word taken, or end when there is none,
// and the index of the first space.
func spacedList(text string, start, end int) (newEnd, gap int) {
	newEnd, gap = end, -1
	for {
		j := newEnd
		for j < len(text) && isSpace(text[j]) {
			j++
		}
		if j == newEnd || j >= len(text) {
			return newEnd, gap
		}
		k := j
		for k < len(text) && !isSpace(text[k]) {
			k++
		}
		word := text[j:k]
		if strings.ContainsAny(word, "=\"`") ||
			!strings.HasSuffix(text[start:newEnd], ",") && !strings.HasPrefix(word, ",") {
			return newEnd, gap
		}
		if gap < 0 {
			gap = newEnd
		}
		newEnd = k
	}
}

// bareWords returns the end of the words that follow text[:end] across
// spaces and are no arguments of their own (no = and no quote), or end
// when there are none.
func bareWords(text string, end int) int {
	for {
		j := end
		for j < len(text) && isSpace(text[j]) {
			j++
		}
		if j == end || j >= len(text) {
			return end
		}
		k := j
		for k < len(text) && !isSpace(text[k]) {
			k++
		}
		if strings.ContainsAny(text[j:k], "=\"`") {
			return end
		}
		end = k
	}
}

// skipWord returns the index just past the word starting at i, treating Go
// quoted strings inside it as part of the word.
func skipWord(text string, i int) int {
	for i < len(text) && !isSpace(text[i]) {
		if text[i] == '"' || text[i] == '`' {
			if q, err := strconv.QuotedPrefix(text[i:]); err == nil {
				i += len(q)
				continue
			}
		}
		i++
	}
	return i
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' }

// nearMiss reports whether a comment looks like a dagen directive written
// with a space after the slashes ("// dag:step"), which Go treats as prose.
// It returns the directive name it would have been.
func nearMiss(text string) (string, bool) {
	var rest string
	switch {
	case strings.HasPrefix(text, "//"):
		rest = text[2:]
	case strings.HasPrefix(text, "/*"):
		rest = strings.TrimSuffix(text[2:], "*/")
	default:
		return "", false
	}
	trimmed := strings.TrimLeft(rest, " \t")
	if trimmed == rest && strings.HasPrefix(text, "//") {
		return "", false // //dag:… proper, or not ours at all
	}
	name, ok := strings.CutPrefix(trimmed, "dag:")
	if !ok {
		return "", false
	}
	if k := strings.IndexAny(name, " \t"); k >= 0 {
		name = name[:k]
	}
	if _, known := directiveKeys(name); !known {
		return "", false
	}
	return name, true
}
