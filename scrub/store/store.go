package store

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Object is one listed object.
type Object struct {
	// Key is the object key (for a directory, the path relative to the
	// root, with '/' separators).
	Key      string
	Size     int64
	Modified time.Time
}

// Store is a remote storage that can be listed and deleted from.
type Store interface {
	// Name says which storage this is, for reports and errors.
	Name() string
	// List calls fn with every object whose key starts with one of
	// prefixes, a page at a time, in no particular order, never
	// concurrently; a key under two prefixes is listed once. fn must not
	// keep the page. The first error of fn or of the storage ends List.
	List(ctx context.Context, prefixes []string, fn func(page []Object) error) error
	// Delete removes the objects named by keys, calling done once per key
	// with its outcome (nil when removed or already absent). It returns
	// early only when ctx ends.
	Delete(ctx context.Context, keys []string, done func(key string, err error)) error
}

// Covering returns prefixes without those another prefix covers (a prefix
// of another) and without duplicates, sorted: the prefixes to list so no key
// is listed twice. After sorting, a prefix covers the ones that follow it
// until the first that does not start with it.
func Covering(prefixes []string) []string {
	sorted := slices.Clone(prefixes)
	slices.Sort(sorted)
	var out []string
	for _, p := range sorted {
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Mover is a store that can move an object to another key: rlmm repair
// quarantines orphans with it.
type Mover interface {
	Store
	// Move puts the object from at key to and removes from. When it fails,
	// from is still there (to may exist too); the error says which step
	// failed.
	Move(ctx context.Context, from, to string) error
}
