package brokerframe

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
