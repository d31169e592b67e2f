package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// pageSize is how many objects Dir hands to List's callback at a time.
const pageSize = 1000

// Dir is the store of a directory tree: every regular file is an object
// whose key is its path relative to the root.
type Dir struct {
	root string
}

// NewDir returns the store rooted at root, which must be a directory. The
// error names what is wrong with root.
func NewDir(root string) (*Dir, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("remote storage directory %s: %w", root, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("remote storage directory %s: not a directory", root)
	}
	return &Dir{root: root}, nil
}

// Name returns "directory <root>".
func (d *Dir) Name() string { return "directory " + d.root }

// Root returns the directory the keys are relative to.
func (d *Dir) Root() string { return d.root }

// List walks the tree in lexical order. Symbolic links are not followed.
func (d *Dir) List(ctx context.Context, prefixes []string, fn func([]Object) error) error {
	prefixes = Covering(prefixes)
	page := make([]Object, 0, pageSize)
	flush := func() error {
		if len(page) == 0 {
			return nil
		}
		err := fn(page)
		page = page[:0]
		return err
	}
	err := filepath.WalkDir(d.root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("listing %s: %w", path, err)
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		rel, rerr := filepath.Rel(d.root, path)
		if rerr != nil {
			return rerr
		}
		key := filepath.ToSlash(rel)
		if e.IsDir() {
			if key != "." && !underAny(key+"/", prefixes, true) {
				return fs.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() || !underAny(key, prefixes, false) {
			return nil
		}
		info, ierr := e.Info()
		if errors.Is(ierr, fs.ErrNotExist) {
			return nil // removed since the directory was read
		}
		if ierr != nil {
			return fmt.Errorf("listing %s: %w", path, ierr)
		}
		page = append(page, Object{Key: key, Size: info.Size(), Modified: info.ModTime()})
		if len(page) == pageSize {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// underAny reports whether key starts with one of prefixes or, for a
// directory (dir true), whether a prefix may lie below it.
func underAny(key string, prefixes []string, dir bool) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) || (dir && strings.HasPrefix(p, key)) {
			return true
		}
	}
	return false
}

// Delete removes each file named by keys; a key that would leave the root
// (".." or an absolute path) is refused.
func (d *Dir) Delete(ctx context.Context, keys []string, done func(string, error)) error {
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !filepath.IsLocal(filepath.FromSlash(k)) {
			done(k, fmt.Errorf("key %q is not a path inside %s", k, d.root))
			continue
		}
		err := os.Remove(filepath.Join(d.root, filepath.FromSlash(k)))
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		done(k, err)
	}
	return nil
}

var _ Mover = (*Dir)(nil)

// Move renames file from to to (creating to's directories): one rename on
// the same file system, so a failure leaves from where it was. Keys that
// would leave the root are refused.
func (d *Dir) Move(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, k := range []string{from, to} {
		if !filepath.IsLocal(filepath.FromSlash(k)) {
			return fmt.Errorf("key %q is not a path inside %s", k, d.root)
		}
	}
	dst := filepath.Join(d.root, filepath.FromSlash(to))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("moving %s to %s (the original is left in place): %w", from, to, err)
	}
	if err := os.Rename(filepath.Join(d.root, filepath.FromSlash(from)), dst); err != nil {
		return fmt.Errorf("moving %s to %s (the original is left in place): %w", from, to, err)
	}
	return nil
}
