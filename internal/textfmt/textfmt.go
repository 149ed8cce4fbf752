// Package textfmt renders values for operators to read, the same way in
// the dagen command and the web console.
package textfmt

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration renders a duration the way a table needs it: 3s, 4m12s, 2h5m,
// 3d4h; "-" for a negative one.
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
	days := d / (24 * time.Hour)
	return fmt.Sprintf("%dd%dh", days, (d-days*24*time.Hour)/time.Hour)
}

// FirstLine returns the first line of s, cut to 120 bytes.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 120 {
		line = line[:117] + "..."
	}
	return line
}

// Count writes n with its noun, pluralised with an s, and n's thousands
// separated by commas: "1 task", "12,345 tasks".
func Count(n int, noun string) string {
	if n != 1 {
		noun += "s"
	}
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s + " " + noun
}
