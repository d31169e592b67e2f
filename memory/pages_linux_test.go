package memory

import (
	"encoding/binary"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pagemapExclusive reports, for each page of s, whether the kernel maps it
// to a page of the process's own (bit 56 of /proc/self/pagemap): a page only
// read since it was handed out is the shared zero page, which is not.
func pagemapExclusive[T any](t *testing.T, s []T) []bool {
	t.Helper()
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no /proc/self/pagemap to read the mapping from: %v", err)
	}
	defer func() { _ = f.Close() }()
	var zero T
	begin := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	end := begin + uintptr(len(s))*unsafe.Sizeof(zero)
	var out []bool
	buf := make([]byte, 8)
	for page := begin &^ (pageSize - 1); page < end; page += pageSize {
		if _, err := f.ReadAt(buf, int64(page/pageSize*8)); err != nil {
			t.Fatalf("read /proc/self/pagemap at page %#x: %v", page, err)
		}
		e := binary.LittleEndian.Uint64(buf)
		out = append(out, e&(1<<63) != 0 && e&(1<<56) != 0)
	}
	return out
}

func TestMakeWrittenWritesEveryPage(t *testing.T) {
	// 64 MiB: a large allocation the runtime takes fresh from the OS.
	const n = 64 << 20 / 12
	type twelve [3]uint32
	for _, c := range []struct {
		name string
		make func() any
	}{
		{"bytes", func() any { return makeWritten[byte](n * 12) }},
		{"12-byte elements", func() any { return makeWritten[twelve](n) }},
		{"4096-byte elements", func() any { return makeWritten[[4096]byte](n * 12 / 4096) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var pages []bool
			switch s := c.make().(type) {
			case []byte:
				pages = pagemapExclusive(t, s)
				checkZero(t, s)
			case []twelve:
				pages = pagemapExclusive(t, s)
				checkZero(t, s)
			case [][4096]byte:
				pages = pagemapExclusive(t, s)
				checkZero(t, s)
			}
			for k, ok := range pages {
				if !ok {
					t.Fatalf("page %d of %d is not the process's own after makeWritten (the zero page, or not mapped)", k, len(pages))
				}
			}
		})
	}
	// The check above can fail: memory fresh from the OS that was only
	// read is mapped to the zero page.
	read, err := syscall.Mmap(-1, 0, 1<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer func() { _ = syscall.Munmap(read) }()
	sum := byte(0)
	for i := 0; i < len(read); i += pageSize {
		sum += read[i]
	}
	for k, own := range pagemapExclusive(t, read) {
		if own || sum != 0 {
			t.Fatalf("page %d of fresh memory only read counts as the process's own (sum %d): the page check cannot tell", k, sum)
		}
	}
}

func TestMakeWrittenLengths(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 4097} {
		s := makeWritten[int32](n)
		if len(s) != n || cap(s) != n {
			t.Fatalf("makeWritten(%d): len %d cap %d", n, len(s), cap(s))
		}
		checkZero(t, s)
	}
}

func checkZero[T comparable](t *testing.T, s []T) {
	t.Helper()
	var zero T
	for i := range s {
		if s[i] != zero {
			t.Fatalf("element %d is %v, want zero", i, s[i])
		}
	}
}

// prefault maps every whole page of a slice and changes none of its bytes.
func TestPrefaultMapsPagesAndKeepsBytes(t *testing.T) {
	fresh, err := syscall.Mmap(-1, 0, 1<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer func() { _ = syscall.Munmap(fresh) }()
	if err := unix.Madvise(fresh[:pageSize], unix.MADV_POPULATE_WRITE); err != nil {
		t.Skipf("this kernel does not populate pages in bulk (MADV_POPULATE_WRITE: %v); prefault does nothing here", err)
	}
	prefault(fresh)
	for k, own := range pagemapExclusive(t, fresh) {
		if !own {
			t.Fatalf("page %d of %d not mapped after prefault", k, len(fresh)/pageSize)
		}
	}
	checkZero(t, fresh)

	written := make([]uint64, 1<<16)
	for i := range written {
		written[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	prefault(written)
	prefault(written[1:3]) // less than a page: nothing to do
	for i, v := range written {
		if v != uint64(i)*0x9e3779b97f4a7c15 {
			t.Fatalf("element %d changed by prefault: %#x", i, v)
		}
	}
}
