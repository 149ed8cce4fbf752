package analysis

import "testing"

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"100/s", 100, true},
		{"6000/m", 100, true},
		{"0.5/s", 0.5, true},
		{"36/h", 0.01, true},
		{"1.5/m", 0.025, true},
		{"100", 0, false},
		{"100/d", 0, false},
		{"0/s", 0, false},
		{"0.0/m", 0, false},
		{"-1/s", 0, false},
		{"1e3/s", 0, false},
		{".5/s", 0, false},
		{"5./s", 0, false},
		{"/s", 0, false},
		{"Inf/s", 0, false},
		{"10/s/s", 0, false},
	} {
		got, problem := parseRate(c.in)
		if (problem == "") != c.ok || c.ok && got != c.want {
			t.Errorf("parseRate(%q) = %v, %q; want %v, ok %v", c.in, got, problem, c.want, c.ok)
		}
	}
}
