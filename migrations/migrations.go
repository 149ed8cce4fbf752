// Package migrations holds the dagen Postgres schema as numbered SQL files,
// embedded in the binary. pgstore.Migrate applies them in order, each in its
// own transaction, and records each applied version in dagen_migrations.
//
// A file is named NNN_description.up.sql; versions start at 1 and have no
// gaps. Files are never edited once released: a schema change is a new file.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed *.sql
var files embed.FS

// Migration is one schema version.
type Migration struct {
	Version int    // 1, 2, …
	Name    string // the file name
	SQL     string // statements to run, in one transaction
}

// All returns every migration, ordered by version. It fails if a file name
// does not parse or versions are not 1..n without gaps.
func All() ([]Migration, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".up.sql") {
			continue
		}
		prefix, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name is not NNN_description.up.sql", name)
		}
		v, err := strconv.Atoi(prefix)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: bad version %q", name, prefix)
		}
		body, err := fs.ReadFile(files, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: version %d, want %d (versions must be 1..n without gaps)", m.Name, m.Version, i+1)
		}
	}
	return ms, nil
}
