package store

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// writeFiles creates each key as a file under root.
func writeFiles(t *testing.T, root string, keys ...string) {
	t.Helper()
	for _, k := range keys {
		p := filepath.Join(root, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(k), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// listKeys lists d under prefixes and returns the keys, sorted.
func listKeys(t *testing.T, d *Dir, prefixes ...string) []string {
	t.Helper()
	var keys []string
	err := d.List(context.Background(), prefixes, func(page []Object) error {
		for _, o := range page {
			if o.Size != int64(len(o.Key)) {
				t.Errorf("%s: size %d, want %d", o.Key, o.Size, len(o.Key))
			}
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}
