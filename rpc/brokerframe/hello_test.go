package brokerframe

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

func hello(t testing.TB, v byte, h *rlmmpb.BrokerHello) []byte {
	t.Helper()
	b, err := AppendHello(nil, v, h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func answer(t testing.TB, v byte, a *rlmmpb.BrokerAnswer) []byte {
	t.Helper()
	b, err := AppendAnswer(nil, v, a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseHello(t *testing.T) {
	lookup := &rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_LOOKUP, Token: []byte("s3cret"), BrokerId: proto.Int32(3), ClientPid: 77}
	tests := []struct {
		name        string
		body        []byte
		want        *rlmmpb.BrokerHello
		wantVersion byte
		wantErr     string
	}{
		{"lookup", hello(t, Version, lookup), lookup, Version, ""},
		{"watch without token", hello(t, Version, &rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_WATCH}),
			&rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_WATCH}, Version, ""},
		{"other version", hello(t, Version+1, lookup), nil, Version + 1, "client speaks version 2 of the broker frames; this server speaks version 1"},
		{"no purpose", hello(t, Version, &rlmmpb.BrokerHello{}), nil, Version, "purpose 0"},
		{"unknown purpose", hello(t, Version, &rlmmpb.BrokerHello{Purpose: 99}), nil, Version, "purpose 99"},
		{"does not decode", append([]byte(Magic), Version, 0xff), nil, Version, "does not decode"},
		{"magic only", []byte(Magic), nil, 0, "not a broker hello"},
		{"old lookup hello", append([]byte("RLMMLOOKUP"), 1), nil, 0, "not a broker hello"},
		{"http", []byte("GET / HTTP/1.1"), nil, 0, "not a broker hello"},
		{"empty", nil, nil, 0, "not a broker hello"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, v, err := ParseHello(tc.body, Version)
			if v != tc.wantVersion {
				t.Errorf("version %d, want %d", v, tc.wantVersion)
			}
			if tc.wantErr != "" {
				if !errors.Is(err, rlmm.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseHello error %v, want ErrInvalidArgument saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !proto.Equal(h, tc.want) {
				t.Fatalf("ParseHello = %v, %v; want %v", h, err, tc.want)
			}
		})
	}
}

func TestParseAnswer(t *testing.T) {
	info := &rlmmpb.ServerInfoReply{Pid: 4242, ApiVersion: Version, BrokerId: 3}
	tests := []struct {
		name    string
		body    []byte
		wantErr string
	}{
		{"accepted", answer(t, Version, &rlmmpb.BrokerAnswer{Server: info}), ""},
		{"refused", answer(t, Version, &rlmmpb.BrokerAnswer{Refused: "a valid token is required"}), "refused the hello: a valid token is required"},
		{"refused by another version", answer(t, Version+1, &rlmmpb.BrokerAnswer{Refused: "the client speaks version 1"}), "the client speaks version 1"},
		{"accepted in another version", answer(t, Version+1, &rlmmpb.BrokerAnswer{Server: info}), "server speaks version 2 of the broker frames; this client speaks version 1"},
		{"garbage of another version", append([]byte(Magic), Version+1, 0xff), "server speaks version 2"},
		{"accepted without server", answer(t, Version, &rlmmpb.BrokerAnswer{}), "without saying who"},
		{"does not decode", append([]byte(Magic), Version, 0xff), "does not decode"},
		{"not an answer", []byte("x"), "is not one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAnswer(tc.body, Version)
			if tc.wantErr == "" {
				if err != nil || !proto.Equal(got, info) {
					t.Fatalf("ParseAnswer = %v, %v; want %v", got, err, info)
				}
				return
			}
			if !errors.Is(err, rlmm.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ParseAnswer error %v, want ErrInvalidArgument saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestAllows(t *testing.T) {
	reqs := map[string]*rlmmpb.BrokerRequest{
		"lookup":  {Call: &rlmmpb.BrokerRequest_SegmentForOffset{}},
		"add":     {Call: &rlmmpb.BrokerRequest_AddSegment{}},
		"update":  {Call: &rlmmpb.BrokerRequest_UpdateSegment{}},
		"delete":  {Call: &rlmmpb.BrokerRequest_PutPartitionDelete{}},
		"highest": {Call: &rlmmpb.BrokerRequest_HighestOffsetForEpoch{}},
		"list":    {Call: &rlmmpb.BrokerRequest_ListSegments{}},
		"size":    {Call: &rlmmpb.BrokerRequest_RemoteLogSize{}},
		"txn":     {Call: &rlmmpb.BrokerRequest_NextSegmentWithTxnIndex{}},
		"info":    {Call: &rlmmpb.BrokerRequest_ServerInfo{}},
		"leaders": {Call: &rlmmpb.BrokerRequest_LeadershipChanges{}},
		"stop":    {Call: &rlmmpb.BrokerRequest_StopPartitions{}},
		"no call": {},
	}
	tests := []struct {
		purpose rlmmpb.Purpose
		allowed []string
	}{
		{rlmmpb.Purpose_PURPOSE_LOOKUP, []string{"lookup"}},
		{rlmmpb.Purpose_PURPOSE_MUTATE, []string{"add", "update", "delete"}},
		{rlmmpb.Purpose_PURPOSE_READ, []string{"highest", "list", "size", "txn", "info"}},
		{rlmmpb.Purpose_PURPOSE_ASSIGN, []string{"leaders", "stop"}},
		{rlmmpb.Purpose_PURPOSE_WATCH, nil},
		{rlmmpb.Purpose_PURPOSE_UNSPECIFIED, nil},
	}
	for _, tc := range tests {
		t.Run(tc.purpose.String(), func(t *testing.T) {
			for name, req := range reqs {
				want := false
				for _, a := range tc.allowed {
					want = want || a == name
				}
				if got := Allows(tc.purpose, req); got != want {
					t.Errorf("Allows(%s, %s) = %v, want %v", tc.purpose, name, got, want)
				}
			}
		})
	}
}

func TestDump(t *testing.T) {
	var client, server []byte
	client = Append(client, hello(t, Version, &rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_LOOKUP, Token: []byte("s3cret")}))
	req, _ := proto.Marshal(&rlmmpb.BrokerRequest{Id: 1, Call: &rlmmpb.BrokerRequest_SegmentForOffset{
		SegmentForOffset: &rlmmpb.SegmentForOffsetRequest{LeaderEpoch: 4, Offset: 100}}})
	client = Append(client, req)
	client = Append(client, []byte{0xff})
	server = Append(server, answer(t, Version, &rlmmpb.BrokerAnswer{Server: &rlmmpb.ServerInfoReply{Pid: 9}}))
	reply, _ := proto.Marshal(&rlmmpb.BrokerReply{Id: 1, Result: &rlmmpb.BrokerReply_Error{
		Error: &rlmmpb.BrokerError{Kind: rlmmpb.ErrorKind_NOT_READY, Message: "starting"}}})
	server = Append(server, reply)
	push, _ := proto.Marshal(&rlmmpb.ReadinessUpdate{Partitions: []*rlmmpb.PartitionReadiness{{Ready: true}}})
	server = Append(server, push)

	tests := []struct {
		name string
		in   []byte
		side Side
		want []string
		err  error
	}{
		{"client", client, Client, []string{"client 0: hello version 1", "PURPOSE_LOOKUP", "client 1: request", "offset:100", "client 2: 1 bytes, not a request"}, nil},
		{"server", server, Server, []string{"server 0: answer version 1 accepted", "pid:9", "server 1: reply", "NOT_READY", "server 2: readiness", "ready:true"}, nil},
		{"cut", client[:len(client)-1], Client, []string{"client 1: request"}, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Dump(&out, bytes.NewReader(tc.in), tc.side)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Dump error %v, want %v", err, tc.err)
			}
			got := strings.ReplaceAll(out.String(), " ", "")
			for _, w := range tc.want {
				if !strings.Contains(got, strings.ReplaceAll(w, " ", "")) {
					t.Errorf("dump does not say %q:\n%s", w, out.String())
				}
			}
			if strings.Contains(out.String(), "s3cret") {
				t.Errorf("dump prints the token:\n%s", out.String())
			}
		})
	}
}

// FuzzReadFrame feeds arbitrary bytes to the decoders: they never panic,
// never return a body over the bound, and what they accept re-encodes to
// what they read.
func FuzzReadFrame(f *testing.F) {
	f.Add(Append(nil, hello(f, Version, &rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_READ, Token: []byte("tok")})))
	f.Add(Append(nil, answer(f, Version, &rlmmpb.BrokerAnswer{Server: &rlmmpb.ServerInfoReply{Pid: 7}})))
	f.Add(Append(nil, answer(f, Version, &rlmmpb.BrokerAnswer{Refused: "no"})))
	f.Add([]byte{0, 0, 0, 2, 8, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 1 << 10
		r := bytes.NewReader(in)
		var buf []byte
		consumed := 0
		for {
			body, err := ReadFrame(r, buf, max)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, rlmm.ErrInvalidArgument) {
					t.Fatalf("ReadFrame: unexpected error %v", err)
				}
				break
			}
			if len(body) > max {
				t.Fatalf("ReadFrame returned %d bytes over the bound %d", len(body), max)
			}
			if again := Append(nil, body); !bytes.Equal(again, in[consumed:consumed+len(again)]) {
				t.Fatalf("frame re-encodes to %x, read from %x", again, in[consumed:consumed+len(again)])
			}
			consumed += HeaderSize + len(body)
			if h, _, err := ParseHello(body, Version); err == nil {
				if h.GetPurpose() == rlmmpb.Purpose_PURPOSE_UNSPECIFIED {
					t.Fatalf("a hello without a purpose accepted")
				}
			} else if !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Fatalf("ParseHello error %v does not wrap ErrInvalidArgument", err)
			}
			if _, err := ParseAnswer(body, Version); err != nil && !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Fatalf("ParseAnswer error %v does not wrap ErrInvalidArgument", err)
			}
			buf = body[:0]
		}
		for _, side := range []Side{Client, Server} {
			if err := Dump(io.Discard, bytes.NewReader(in), side); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Fatalf("Dump(%s): unexpected error %v", side, err)
			}
		}
	})
}
