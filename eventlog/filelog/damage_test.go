package filelog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamageInAnyPartitionIsACleanError damages the first of three
// partitions (so the ones after it are never loaded) and checks that both
// kinds of open fail with an error naming the damaged file, instead of
// panicking in the cleanup of partitions that were never loaded.
func TestDamageInAnyPartitionIsACleanError(t *testing.T) {
	tests := []struct {
		name string
		// damage breaks partition 0 of the closed log in dir and returns
		// the path the error must name.
		damage func(t *testing.T, dir string) string
	}{
		{
			name: "first segment's base offset is not 0",
			damage: func(t *testing.T, dir string) string {
				seg := segmentFiles(t, dir, 0)[0]
				moved := filepath.Join(filepath.Dir(seg), segmentName(7))
				if err := os.Rename(seg, moved); err != nil {
					t.Fatal(err)
				}
				return moved
			},
		},
		{
			name: "a segment name that is not a number",
			damage: func(t *testing.T, dir string) string {
				bad := filepath.Join(dir, partitionDirName(0), "notanumber"+segmentSuffix)
				writeFile(t, bad, "")
				return bad
			},
		},
		{
			name: "a segment that cannot be opened",
			damage: func(t *testing.T, dir string) string {
				// Tests may run as root, which reads any mode: a dangling
				// symbolic link cannot be opened by anyone.
				seg := segmentFiles(t, dir, 0)[0]
				if err := os.Remove(seg); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(dir, "gone"), seg); err != nil {
					t.Fatal(err)
				}
				return seg
			},
		},
		{
			name: "a partition directory that cannot be read",
			damage: func(t *testing.T, dir string) string {
				pdir := filepath.Join(dir, partitionDirName(0))
				if err := os.RemoveAll(pdir); err != nil {
					t.Fatal(err)
				}
				writeFile(t, pdir, "not a directory")
				return pdir
			},
		},
	}
	for _, tc := range tests {
		for _, readOnly := range []bool{false, true} {
			mode := "read-write"
			if readOnly {
				mode = "read-only"
			}
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "log")
				l := mustOpen(t, dir, Options{Partitions: 3})
				for p := range int32(3) {
					publishRecords(t, l, p, 0, 5)
				}
				mustClose(t, l)
				file := tc.damage(t, dir)

				l, err := Open(dir, Options{ReadOnly: readOnly})
				if err == nil {
					mustClose(t, l)
					t.Fatalf("Open of a damaged log succeeded")
				}
				if !strings.Contains(err.Error(), file) {
					t.Errorf("error %q does not name %s", err, file)
				}
				if !readOnly {
					// The failed open released its lock: a second attempt
					// gets the same error, not ErrLocked.
					if _, err2 := Open(dir, Options{}); err2 == nil || err2.Error() != err.Error() {
						t.Errorf("second open: got %v, want %v again", err2, err)
					}
				}
			})
		}
	}
}
