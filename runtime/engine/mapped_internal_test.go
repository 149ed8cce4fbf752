package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplitArray(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`[1,"a,b",{"x":[1,2]},null, [ ] ]`, []string{`1`, `"a,b"`, `{"x":[1,2]}`, `null`, `[ ]`}},
		{` [ ] `, nil},
		{`null`, nil},
		{"[\n  1,\n  2\n]", []string{`1`, `2`}},
	} {
		got, err := splitArray([]byte(tc.in), "p")
		require.NoError(t, err, tc.in)
		var s []string
		for _, g := range got {
			s = append(s, string(g))
		}
		require.Equal(t, tc.want, s, tc.in)
		n, err := countArray([]byte(tc.in), "p")
		require.NoError(t, err)
		require.Equal(t, len(tc.want), n)
	}
	for _, bad := range []string{`{"a":1}`, `"s"`, `[1,`, `[1 2]`, ``, `[1]x`} {
		_, err := splitArray([]byte(bad), "p")
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "output of p is not a slice to map", bad)
	}
}
