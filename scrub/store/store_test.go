package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCovering(t *testing.T) {
	cases := []struct{ in, want []string }{
		{[]string{"a/"}, []string{"a/"}},
		{[]string{"a/", "a/b/", "b/"}, []string{"a/", "b/"}},
		{[]string{"b/", "a/", "b/"}, []string{"a/", "b/"}},
		{[]string{"", "x/"}, []string{""}},
		{[]string{"ab", "a"}, []string{"a"}},
		{nil, nil},
	}
	for _, c := range cases {
		if got := Covering(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Covering(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDirListAndDelete(t *testing.T) {
	root := t.TempDir()
	var many []string
	for i := range 2500 { // more than a page
		many = append(many, fmt.Sprintf("p-0-x/%05d.log", i))
	}
	writeFiles(t, root, append(many, "q-1-y/a.log", "top.txt")...)
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	all := listKeys(t, d, "")
	if len(all) != 2502 || !slices.Contains(all, "top.txt") || !slices.Contains(all, "q-1-y/a.log") {
		t.Fatalf("listed %d keys", len(all))
	}
	if got := listKeys(t, d, "q-"); !slices.Equal(got, []string{"q-1-y/a.log"}) {
		t.Fatalf("under q-: %v", got)
	}
	var outcomes []string
	err = d.Delete(context.Background(), []string{"q-1-y/a.log", "absent.log", "../outside", "/etc/passwd"}, func(k string, err error) {
		outcomes = append(outcomes, fmt.Sprintf("%s:%v", k, err == nil))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"q-1-y/a.log:true", "absent.log:true", "../outside:false", "/etc/passwd:false"}
	if !slices.Equal(outcomes, want) {
		t.Fatalf("delete outcomes %v, want %v", outcomes, want)
	}
	if _, err := os.Stat(filepath.Join(root, "q-1-y", "a.log")); !os.IsNotExist(err) {
		t.Fatalf("q-1-y/a.log still there: %v", err)
	}
	if _, err := NewDir(filepath.Join(root, "top.txt")); err == nil {
		t.Fatal("NewDir of a file: no error")
	}
}
