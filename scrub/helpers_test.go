package scrub_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
	"github.com/rlmm-go/rlmm/scrub/store"
)

// mustLayout returns the named layout or fails t.
func mustLayout(t testing.TB, name, prefix string) layout.Layout {
	t.Helper()
	l, err := layout.New(name, layout.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// indexOf builds and seals the index of f's segments.
func indexOf(f *scrubtest.Fixture) *scrub.Index {
	x := scrub.NewIndex(f.Layout, len(f.Segments))
	parts := map[rlmm.TopicIDPartition]int32{}
	var last rlmm.TopicIDPartition
	p := int32(-1)
	for _, s := range f.Segments {
		if p < 0 || s.TP != last {
			var ok bool
			if p, ok = parts[s.TP]; !ok {
				p = x.AddPartition(s.TP)
				parts[s.TP] = p
			}
			last = s.TP
		}
		x.Add(p, &s.Meta)
	}
	x.Seal()
	return x
}

// listing is f's objects as a store lists them, modified at mtime.
func listing(f *scrubtest.Fixture, mtime time.Time) []store.Object {
	objs := f.Objects()
	out := make([]store.Object, len(objs))
	for i, o := range objs {
		out[i] = store.Object{Key: o.Key, Size: o.Size, Modified: mtime}
	}
	return out
}

// compareAll runs a comparison of x against objs.
func compareAll(x *scrub.Index, objs []store.Object, now time.Time) *scrub.Report {
	c := scrub.NewComparer(x, now)
	c.ObservePage(objs)
	return c.Report()
}

func sizeLabel(n int) string {
	if n >= 1_000_000 && n%1_000_000 == 0 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return fmt.Sprint(n)
}

// cpuTime is the process's user and system CPU time so far (every thread:
// the garbage collector's work counts too).
func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
