package lookupframe

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/rlmm-go/rlmm"
)

func TestReadFrame(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		max     int
		want    []byte
		wantErr error
	}{
		{"empty body", []byte{0, 0, 0, 0}, 8, []byte{}, nil},
		{"body", Append(nil, []byte("abc")), 8, []byte("abc"), nil},
		{"at the bound", Append(nil, []byte("12345678")), 8, []byte("12345678"), nil},
		{"over the bound", Append(nil, []byte("123456789")), 8, nil, rlmm.ErrInvalidArgument},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff}, MaxReply, nil, rlmm.ErrInvalidArgument},
		{"nothing", nil, 8, nil, io.EOF},
		{"header cut", []byte{0, 0}, 8, nil, io.ErrUnexpectedEOF},
		{"body cut", []byte{0, 0, 0, 3, 'a'}, 8, nil, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFrame(bytes.NewReader(tc.in), nil, tc.max)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ReadFrame error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("ReadFrame = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestReadFrameReusesBuffer(t *testing.T) {
	buf := make([]byte, 64)
	r := bytes.NewReader(append(Append(nil, []byte("one")), Append(nil, []byte("two"))...))
	for _, want := range []string{"one", "two"} {
		got, err := ReadFrame(r, buf, 64)
		if err != nil || string(got) != want {
			t.Fatalf("ReadFrame = %q, %v; want %q", got, err, want)
		}
		if &got[:1][0] != &buf[0] {
			t.Fatalf("the body of %q is not in the caller's buffer", want)
		}
	}
	if _, err := ReadFrame(r, buf, 64); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestHello(t *testing.T) {
	tests := []struct {
		name      string
		body      []byte
		wantKind  Kind
		wantToken string
		wantErr   bool
	}{
		{"no token", AppendHello(nil, Lookups, nil), Lookups, "", false},
		{"token", AppendHello(nil, Lookups, []byte("s3cret")), Lookups, "s3cret", false},
		{"mutations", AppendHello(nil, Mutations, []byte("s3cret")), Mutations, "s3cret", false},
		{"not a hello", []byte("GET / HTTP/1.1"), 0, "", true},
		{"magic only", []byte(MagicLookups), 0, "", true},
		{"mutation magic only", []byte(MagicMutations), 0, "", true}, // not a hello: no kind
		{"other version", append([]byte(MagicLookups), Version+1), 0, "", true},
		{"mutations, other version", append([]byte(MagicMutations), Version+1), Mutations, "", true},
		{"empty", nil, 0, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, tok, err := ParseHello(tc.body)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseHello error %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Fatalf("ParseHello error %v does not wrap ErrInvalidArgument", err)
			}
			if k != tc.wantKind || string(tok) != tc.wantToken {
				t.Fatalf("kind %v, token %q; want %v, %q", k, tok, tc.wantKind, tc.wantToken)
			}
		})
	}
}

func TestAnswer(t *testing.T) {
	tests := []struct {
		name    string
		kind    Kind
		body    []byte
		wantPid int64
		wantErr string
	}{
		{"accepted", Lookups, AppendAccept(nil, Lookups, 4242), 4242, ""},
		{"mutations accepted", Mutations, AppendAccept(nil, Mutations, 4242), 4242, ""},
		{"refused", Lookups, AppendRefuse(nil, Lookups, "a valid token is required"), 0, "a valid token is required"},
		{"mutations refused", Mutations, AppendRefuse(nil, Mutations, "no"), 0, "refused the mutation hello: no"},
		{"the other kind's acceptance", Mutations, AppendAccept(nil, Lookups, 1), 0, "is not one"},
		{"accept cut", Lookups, AppendAccept(nil, Lookups, 1)[:len(MagicLookups)+5], 0, "not 20"},
		{"other status", Lookups, append([]byte(MagicLookups), Version, 9), 0, "status 9"},
		{"other version", Lookups, append([]byte(MagicLookups), Version+1, 0), 0, "version 2"},
		{"garbage", Lookups, []byte("x"), 0, "is not one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pid, err := ParseAnswer(tc.kind, tc.body)
			if tc.wantErr == "" {
				if err != nil || pid != tc.wantPid {
					t.Fatalf("ParseAnswer = %d, %v; want %d", pid, err, tc.wantPid)
				}
				return
			}
			if err == nil || !errors.Is(err, rlmm.ErrInvalidArgument) || !bytes.Contains([]byte(err.Error()), []byte(tc.wantErr)) {
				t.Fatalf("ParseAnswer error %v, want ErrInvalidArgument saying %q", err, tc.wantErr)
			}
		})
	}
}

// FuzzReadFrame feeds arbitrary bytes to the decoders: they never panic,
// never return a body over the bound, and what they accept re-encodes to
// the same bytes.
func FuzzReadFrame(f *testing.F) {
	f.Add(Append(nil, AppendHello(nil, Lookups, []byte("tok"))))
	f.Add(Append(nil, AppendHello(nil, Mutations, []byte("tok"))))
	f.Add(Append(nil, AppendAccept(nil, Lookups, 7)))
	f.Add(Append(nil, AppendAccept(nil, Mutations, 7)))
	f.Add(Append(nil, AppendRefuse(nil, Lookups, "no")))
	f.Add([]byte{0, 0, 0, 2, 8, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 1 << 10
		r := bytes.NewReader(in)
		var buf []byte
		var consumed int
		for {
			body, err := ReadFrame(r, buf, max)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, rlmm.ErrInvalidArgument) {
					t.Fatalf("ReadFrame: unexpected error %v", err)
				}
				return
			}
			if len(body) > max {
				t.Fatalf("ReadFrame returned %d bytes over the bound %d", len(body), max)
			}
			if again := Append(nil, body); !bytes.Equal(again, in[consumed:consumed+len(again)]) {
				t.Fatalf("frame re-encodes to %x, read from %x", again, in[consumed:consumed+len(again)])
			}
			consumed += HeaderSize + len(body)
			if k, tok, err := ParseHello(body); err == nil && !bytes.Equal(AppendHello(nil, k, tok), body) {
				t.Fatalf("%s hello with token %q re-encodes differently", k, tok)
			}
			for _, k := range []Kind{Lookups, Mutations} {
				if pid, err := ParseAnswer(k, body); err == nil && !bytes.Equal(AppendAccept(nil, k, pid), body) {
					t.Fatalf("%s acceptance with pid %d re-encodes differently", k, pid)
				}
			}
			buf = body[:0]
		}
	})
}
