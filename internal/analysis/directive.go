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
	dirSleep     = "sleep"
	dirOnFailure = "onfailure"
)

// directivePrefix starts every directive. Like //go: directives, there is no
// space after the slashes.
const directivePrefix = "//dag:"

// directiveNames lists the directives in the order they are documented.
func directiveNames() []string { return []string{dirWorkflow, dirStep, dirSleep, dirOnFailure} }

// directiveKeys returns the keys a directive accepts, and false for an
// unknown directive.
func directiveKeys(name string) ([]string, bool) {
	switch name {
	case dirWorkflow:
		return []string{"name"}, true
	case dirStep:
		return []string{"after", "skip", "retry", "backoff", "maxbackoff", "timeout", "name"}, true
	case dirSleep:
		return []string{"after", "name"}, true
	case dirOnFailure:
		return nil, true
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
			out = append(out, item{
				Text: a.Value[start:i],
				Pos:  offset + token.Pos(start),
				End:  offset + token.Pos(i),
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
