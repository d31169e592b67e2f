package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "target")
	for _, content := range []string{"first", "second, longer"} {
		if err := WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("content %q, %v; want %q", got, err, content)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the target", len(entries))
	}
}

// An aborted file leaves the target as it was and no temporary file.
func TestAbortKeepsTheTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "target")
	if err := WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	f.Abort()
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "old" {
		t.Fatalf("content %q, %v; want old", got, err)
	}
	if stale, _ := filepath.Glob(path + ".*.tmp"); len(stale) != 0 {
		t.Errorf("temporary files left: %v", stale)
	}
}

// A committed file stays open under the target's name.
func TestCommitKeepsTheFileOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	if _, err := f.Write([]byte("head")); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("+tail")); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "head+tail" {
		t.Fatalf("content %q, %v; want head+tail", got, err)
	}
}

// The target gets the permissions its owner asked for, not CreateTemp's 0600.
func TestCreateSetsThePermissions(t *testing.T) {
	dir := t.TempDir()
	for _, perm := range []os.FileMode{0o600, 0o644} {
		path := filepath.Join(dir, perm.String())
		if err := WriteFile(path, []byte("x"), perm); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != perm {
			t.Errorf("%s: mode %s, want %s", path, got, perm)
		}
	}
}
