package rebuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Object is an opened remote object, read at offsets.
type Object interface {
	io.ReaderAt
	io.Closer
}

// Opener opens the objects of a store for reading (the store's List gives
// the keys and sizes).
type Opener interface {
	Open(ctx context.Context, key string) (Object, error)
}

// DirOpener opens the files of a directory tree (store.Dir's keys: paths
// relative to Root with '/' separators).
type DirOpener struct{ Root string }

// Open opens the file of key; a key that would leave the root is refused.
func (d DirOpener) Open(_ context.Context, key string) (Object, error) {
	rel := filepath.FromSlash(key)
	if !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("key %q is not a path inside %s", key, d.Root)
	}
	f, err := os.Open(filepath.Join(d.Root, rel))
	if err != nil {
		return nil, err
	}
	return f, nil
}

// readSmall reads the whole object key of size bytes, refusing one larger
// than limit (a checkpoint or a manifest is small; a huge one is not one).
func readSmall(ctx context.Context, o Opener, key string, size, limit int64) ([]byte, error) {
	if size > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a %s may have", key, size, limit, "file of this kind")
	}
	obj, err := o.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", key, err)
	}
	defer obj.Close()
	b := make([]byte, size)
	n, err := obj.ReadAt(b, 0)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	return b[:n], nil
}
