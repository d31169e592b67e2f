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
		wantToken string
		wantErr   bool
	}{
		{"no token", AppendHello(nil, nil), "", false},
		{"token", AppendHello(nil, []byte("s3cret")), "s3cret", false},
		{"not a hello", []byte("GET / HTTP/1.1"), "", true},
		{"magic only", []byte(Magic), "", true},
		{"other version", append([]byte(Magic), Version+1), "", true},
		{"empty", nil, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := ParseHello(tc.body)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseHello error %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Fatalf("ParseHello error %v does not wrap ErrInvalidArgument", err)
			}
			if string(tok) != tc.wantToken {
				t.Fatalf("token %q, want %q", tok, tc.wantToken)
			}
		})
	}
}

func TestAnswer(t *testing.T) {
	tests := []struct {
		name    string
		body    []byte
		wantPid int64
		wantErr string
	}{
		{"accepted", AppendAccept(nil, 4242), 4242, ""},
		{"refused", AppendRefuse(nil, "a valid token is required"), 0, "a valid token is required"},
		{"accept cut", AppendAccept(nil, 1)[:len(Magic)+5], 0, "not 20"},
		{"other status", append([]byte(Magic), Version, 9), 0, "status 9"},
		{"other version", append([]byte(Magic), Version+1, 0), 0, "version 2"},
		{"garbage", []byte("x"), 0, "is not one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pid, err := ParseAnswer(tc.body)
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
	f.Add(Append(nil, AppendHello(nil, []byte("tok"))))
	f.Add(Append(nil, AppendAccept(nil, 7)))
	f.Add(Append(nil, AppendRefuse(nil, "no")))
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
			if tok, err := ParseHello(body); err == nil && !bytes.Equal(AppendHello(nil, tok), body) {
				t.Fatalf("hello with token %q re-encodes differently", tok)
			}
			if pid, err := ParseAnswer(body); err == nil && !bytes.Equal(AppendAccept(nil, pid), body) {
				t.Fatalf("acceptance with pid %d re-encodes differently", pid)
			}
			buf = body[:0]
		}
	})
}
