package gen

import "testing"

func TestPathAlias(t *testing.T) {
	for _, tc := range []struct {
		path, name string
		taken      []string
		want       string
	}{
		{"example.com/shop/model", "model", nil, "shopmodel"},
		{"example.com/shop/model", "model", []string{"shopmodel"}, "examplecomshopmodel"},
		{"github.com/jackc/pgx/v5", "pgx", nil, "jackcpgx"},
		{"example.com/my-shop/model", "model", nil, "myshopmodel"},
		{"example.com/3rd/model", "model", nil, "examplecom3rdmodel"},
		{"model", "model", nil, "model2"},
	} {
		taken := map[string]bool{"model": true}
		for _, n := range tc.taken {
			taken[n] = true
		}
		if got := pathAlias(tc.path, tc.name, taken); got != tc.want {
			t.Errorf("pathAlias(%q, %q) = %q, want %q", tc.path, tc.name, got, tc.want)
		}
	}
}
