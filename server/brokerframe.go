package server

import (
	"bufio"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/brokerframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/topicbased"
)

// brokerConn is one framed connection opened with the broker hello
// (rpc/brokerframe), for one purpose, on its own goroutine: every request
// read, answered, and its reply written back before the next is read. Its buffers and its lookup answer are
// reused from one request to the next.
type brokerConn struct {
	fs      *framedServer
	c       net.Conn
	r       *bufio.Reader
	purpose rlmmpb.Purpose
	in, out []byte

	lookup lookupAnswerer
	reply  rlmmpb.BrokerReply
	seg    rlmmpb.BrokerReply_Segment
}

// maxCallTimeout bounds a request's timeout_ms: an hour, far past any the
// plugin sets, so a wild value is refused rather than overflowing a
// duration.
const maxCallTimeout = time.Hour

// serveBroker runs a connection whose first frame, hello, opens with
// brokerframe.Magic: the hello answered (refused: why, and closed), then the
// connection's purpose served until the client closes, a frame is too
// large, or stop.
func (fs *framedServer) serveBroker(c net.Conn, r *bufio.Reader, hello []byte) {
	v := byte(fs.s.cfg.apiVersion())
	h, _, err := brokerframe.ParseHello(hello, v)
	if err == nil && len(fs.token) > 0 && subtle.ConstantTimeCompare(h.GetToken(), fs.token) != 1 {
		err = errors.New("a valid token is required")
	}
	if err == nil && h.BrokerId != nil && fs.s.cfg.BrokerID >= 0 && h.GetBrokerId() != fs.s.cfg.BrokerID {
		err = fmt.Errorf("this rlmm serve is broker %d's, not broker %d's", fs.s.cfg.BrokerID, h.GetBrokerId())
	}
	if err != nil {
		fs.s.logger.Warn("server: refusing a framed broker connection", "error", err)
		if out, aerr := brokerframe.AppendAnswer(nil, v, &rlmmpb.BrokerAnswer{Refused: err.Error()}); aerr == nil {
			c.Write(brokerframe.Append(nil, out)) // closed next either way
		}
		return
	}
	info := fs.s.svc.serverInfo()
	out, err := brokerframe.AppendAnswer(nil, v, &rlmmpb.BrokerAnswer{Server: info})
	if err != nil {
		fs.s.logger.Error("server: the answer to a broker hello does not encode", "error", err)
		return
	}
	if _, err := c.Write(brokerframe.Append(nil, out)); err != nil {
		return
	}
	bc := &brokerConn{fs: fs, c: c, r: r, purpose: h.GetPurpose(), in: make([]byte, 0, 1024), out: make([]byte, 0, 4096),
		lookup: lookupAnswerer{v: fs.s.svc}}
	fs.s.logger.Debug("server: a framed broker connection", "purpose", bc.purpose, "client_pid", h.GetClientPid())
	if bc.purpose == rlmmpb.Purpose_PURPOSE_WATCH {
		bc.watch()
		return
	}
	bc.serve()
}

// serve answers requests until the client closes, a frame is too large
// (answered INVALID_ARGUMENT, then closed) or stop.
func (bc *brokerConn) serve() {
	for {
		body, err := brokerframe.ReadFrame(bc.r, bc.in, brokerframe.MaxRequest)
		if err != nil {
			if errors.Is(err, rlmm.ErrInvalidArgument) {
				bc.fs.s.logger.Warn("server: closing a framed broker connection", "purpose", bc.purpose, "error", err)
				bc.send(&rlmmpb.BrokerReply{Result: brokerErr(err, false)}) // closed next either way
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				bc.fs.s.logger.Debug("server: a framed broker connection ended", "purpose", bc.purpose, "error", err)
			}
			return
		}
		bc.in = body[:0]
		if !bc.answer(body) {
			return
		}
	}
}

// send writes one reply frame; false when the connection is done (the
// write failed, or the reply does not encode: said, not hidden).
func (bc *brokerConn) send(reply *rlmmpb.BrokerReply) bool {
	out, start := brokerframe.Begin(bc.out[:0])
	out, err := proto.MarshalOptions{}.MarshalAppend(out, reply)
	if err != nil {
		bc.fs.s.logger.Error("server: a framed reply does not encode; closing the connection", "purpose", bc.purpose, "error", err)
		return false
	}
	bc.out = brokerframe.End(out, start)
	_, err = bc.c.Write(bc.out)
	return err == nil
}

// answer answers one encoded request; false when the connection is done.
func (bc *brokerConn) answer(raw []byte) bool {
	var req rlmmpb.BrokerRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		return bc.send(&rlmmpb.BrokerReply{Id: frameID(raw), Result: brokerErr(
			fmt.Errorf("%w: a request of %d bytes that does not decode: %v", rlmm.ErrInvalidArgument, len(raw), err), false)})
	}
	id := req.GetId()
	if !brokerframe.Allows(bc.purpose, &req) {
		return bc.send(&rlmmpb.BrokerReply{Id: id, Result: brokerErr(
			fmt.Errorf("%w: a request of %T on a connection opened for %s", rlmm.ErrInvalidArgument, req.GetCall(), bc.purpose), false)})
	}
	v := bc.fs.s.svc
	switch call := req.GetCall().(type) {
	case *rlmmpb.BrokerRequest_SegmentForOffset:
		return bc.answerLookup(id, call.SegmentForOffset)
	case *rlmmpb.BrokerRequest_ListSegments:
		return bc.answerList(id, call.ListSegments)
	case *rlmmpb.BrokerRequest_ServerInfo:
		info := v.serverInfo()
		return bc.send(&rlmmpb.BrokerReply{Id: id, Result: &rlmmpb.BrokerReply_ServerInfo{ServerInfo: info}})
	case *rlmmpb.BrokerRequest_HighestOffsetForEpoch:
		q := call.HighestOffsetForEpoch
		return bc.read(id, q.GetTopicIdPartition(), func(m *topicbased.Manager, tp rlmm.TopicIDPartition, r *rlmmpb.BrokerReply) error {
			off, ok, err := m.HighestOffsetForEpoch(tp, q.GetLeaderEpoch())
			r.Result = &rlmmpb.BrokerReply_HighestOffset{HighestOffset: &rlmmpb.HighestOffsetForEpochReply{Found: ok, Offset: off}}
			return err
		})
	case *rlmmpb.BrokerRequest_RemoteLogSize:
		q := call.RemoteLogSize
		return bc.read(id, q.GetTopicIdPartition(), func(m *topicbased.Manager, tp rlmm.TopicIDPartition, r *rlmmpb.BrokerReply) error {
			size, err := m.RemoteLogSize(tp, q.GetLeaderEpoch())
			r.Result = &rlmmpb.BrokerReply_RemoteLogSize{RemoteLogSize: &rlmmpb.RemoteLogSizeReply{SizeInBytes: size}}
			return err
		})
	case *rlmmpb.BrokerRequest_NextSegmentWithTxnIndex:
		q := call.NextSegmentWithTxnIndex
		return bc.read(id, q.GetTopicIdPartition(), func(m *topicbased.Manager, tp rlmm.TopicIDPartition, r *rlmmpb.BrokerReply) error {
			md, ok, err := m.NextSegmentWithTxnIndex(tp, q.GetLeaderEpoch(), q.GetOffset())
			found := &rlmmpb.SegmentReply{Found: ok}
			if ok {
				found.Segment = segmentToProto(&md)
			}
			r.Result = &rlmmpb.BrokerReply_Segment{Segment: found}
			return err
		})
	}
	// A mutation or an assignment change: bounded by the caller's time left.
	ms := req.GetTimeoutMs()
	if ms == 0 || ms > uint64(maxCallTimeout.Milliseconds()) {
		return bc.send(&rlmmpb.BrokerReply{Id: id, Result: brokerErr(fmt.Errorf("%w: a %s request's timeout_ms must be between 1 and %d, got %d",
			rlmm.ErrInvalidArgument, bc.purpose, maxCallTimeout.Milliseconds(), ms), false)})
	}
	if late := bc.pastDeadline(req.GetDeadlineUnixMs()); late > 0 {
		return bc.send(&rlmmpb.BrokerReply{Id: id, Result: brokerErr(fmt.Errorf("%w: a %s request read %v after its caller's deadline: not run, nothing published",
			rlmm.ErrTimeout, bc.purpose, late), false)})
	}
	ctx, cancel := context.WithTimeout(bc.fs.ctx, time.Duration(ms)*time.Millisecond)
	defer cancel()
	sync := bc.waited(req.GetDeadlineUnixMs(), ms) > staleAfter
	var err error
	mutation := true
	switch call := req.GetCall().(type) {
	case *rlmmpb.BrokerRequest_AddSegment:
		err = applyMutation(ctx, bc.fs.s, func() (rlmm.SegmentMetadata, error) { return segmentFromProto(call.AddSegment.GetSegment()) },
			func(md rlmm.SegmentMetadata) rlmm.TopicIDPartition { return md.ID.TopicIDPartition }, sync,
			func(rlmm.SegmentMetadata) bool { return true }, (*topicbased.Manager).AddSegment)
	case *rlmmpb.BrokerRequest_UpdateSegment:
		err = applyMutation(ctx, bc.fs.s, func() (rlmm.SegmentUpdate, error) { return updateFromProto(call.UpdateSegment.GetUpdate()) },
			func(u rlmm.SegmentUpdate) rlmm.TopicIDPartition { return u.ID.TopicIDPartition }, sync,
			func(u rlmm.SegmentUpdate) bool { return u.State == rlmm.DeleteSegmentStarted }, (*topicbased.Manager).UpdateSegment)
	case *rlmmpb.BrokerRequest_PutPartitionDelete:
		err = applyMutation(ctx, bc.fs.s, func() (rlmm.PartitionDelete, error) { return deleteFromProto(call.PutPartitionDelete.GetDelete()) },
			func(d rlmm.PartitionDelete) rlmm.TopicIDPartition { return d.TopicIDPartition }, sync, nil, (*topicbased.Manager).PutPartitionDelete)
	case *rlmmpb.BrokerRequest_LeadershipChanges:
		mutation = false
		err = bc.fs.s.leadershipChanges(ctx, call.LeadershipChanges)
	case *rlmmpb.BrokerRequest_StopPartitions:
		mutation = false
		err = bc.fs.s.stopPartitions(ctx, call.StopPartitions)
	}
	if err != nil {
		return bc.send(&rlmmpb.BrokerReply{Id: id, Result: brokerErr(err, mutation)})
	}
	return bc.send(&rlmmpb.BrokerReply{Id: id, Result: &rlmmpb.BrokerReply_Done{Done: &rlmmpb.MutationReply{}}})
}

// pastDeadline is how long after the caller's deadline (deadline_unix_ms)
// a request is read, or 0. Only a Unix socket's peer shares this host's
// clock; over TCP the deadline is not checked.
func (bc *brokerConn) pastDeadline(deadlineUnixMs int64) time.Duration {
	if deadlineUnixMs <= 0 || bc.c.LocalAddr().Network() != "unix" {
		return 0
	}
	if late := time.Now().UnixMilli() - deadlineUnixMs; late > 0 {
		return time.Duration(late) * time.Millisecond
	}
	return 0
}

// staleAfter is how long a mutation may wait between its caller's send and
// its read here before the server syncs the manager's cache first: a
// Unix socket hands a request over in microseconds, so a wait this long
// means this process did not run (SIGSTOP, a frozen host) while the log
// went on, and the cache the mutation is checked against missed it (a new
// leader's deletion of the very segment, say).
const staleAfter = time.Second

// waited is how long after its caller sent it a request is read: its
// deadline (deadline_unix_ms) less its timeout_ms, the time left when the
// plugin sent it, on this host's clock. 0 when unknown (no deadline, or
// over TCP, whose peer's clock is not this one).
func (bc *brokerConn) waited(deadlineUnixMs int64, timeoutMs uint64) time.Duration {
	if deadlineUnixMs <= 0 || bc.c.LocalAddr().Network() != "unix" {
		return 0
	}
	if w := time.Now().UnixMilli() - (deadlineUnixMs - int64(timeoutMs)); w > 0 {
		return time.Duration(w) * time.Millisecond
	}
	return 0
}

// read answers a read of partition ptp, which never waits: before the
// manager is up it answers NOT_READY. do sets the reply's result.
func (bc *brokerConn) read(id uint64, ptp *rlmmpb.TopicIdPartition,
	do func(*topicbased.Manager, rlmm.TopicIDPartition, *rlmmpb.BrokerReply) error) bool {
	r := &rlmmpb.BrokerReply{Id: id}
	err := func() error {
		tp, err := tpFromProto(ptp, "topic_id_partition")
		if err != nil {
			return err
		}
		m, err := bc.fs.s.svc.reader()
		if err != nil {
			return err
		}
		return do(m, tp, r)
	}()
	if err != nil {
		r.Result = brokerErr(err, false)
	}
	return bc.send(r)
}

// answerLookup is the fetch path's lookup (lookupAnswerer): its segment
// filled in place and the reply reused, so a hit allocates nothing of its
// own.
func (bc *brokerConn) answerLookup(id uint64, q *rlmmpb.SegmentForOffsetRequest) bool {
	a := &bc.lookup
	found, err := a.find(q)
	if err != nil {
		return bc.send(&rlmmpb.BrokerReply{Id: id, Result: brokerErr(err, false)})
	}
	if found {
		a.ans.hit(&a.md)
	} else {
		a.ans.miss()
	}
	bc.seg.Segment = &a.ans.found
	bc.reply.Id, bc.reply.More, bc.reply.Result = id, false, &bc.seg
	return bc.send(&bc.reply)
}

// answerList sends a partition's segments (or one epoch's) in the
// manager's order, in replies of at most brokerframe.ListBatchBytes each
// (one larger segment goes alone), every one but the last with more.
func (bc *brokerConn) answerList(id uint64, q *rlmmpb.ListSegmentsRequest) bool {
	segs, err := func() ([]rlmm.SegmentMetadata, error) {
		tp, err := tpFromProto(q.GetTopicIdPartition(), "topic_id_partition")
		if err != nil {
			return nil, err
		}
		m, err := bc.fs.s.svc.reader()
		if err != nil {
			return nil, err
		}
		if q.LeaderEpoch != nil {
			return m.ListSegmentsForEpoch(tp, q.GetLeaderEpoch())
		}
		return m.ListSegments(tp)
	}()
	if err != nil {
		return bc.send(&rlmmpb.BrokerReply{Id: id, Result: brokerErr(err, false)})
	}
	batch := &rlmmpb.SegmentBatch{}
	size := 0
	for i := range segs {
		seg := segmentToProto(&segs[i])
		grow := 1 + protowire.SizeBytes(proto.Size(seg))
		if len(batch.Segments) > 0 && size+grow > brokerframe.ListBatchBytes {
			if !bc.send(&rlmmpb.BrokerReply{Id: id, More: true, Result: &rlmmpb.BrokerReply_Segments{Segments: batch}}) {
				return false
			}
			batch = &rlmmpb.SegmentBatch{}
			size = 0
		}
		batch.Segments = append(batch.Segments, seg)
		size += grow
	}
	return bc.send(&rlmmpb.BrokerReply{Id: id, Result: &rlmmpb.BrokerReply_Segments{Segments: batch}})
}

// watch pushes readiness until the client closes the connection (a read
// of it ends), the server stops, or a write fails.
func (bc *brokerConn) watch() {
	ctx, cancel := context.WithCancel(bc.fs.ctx)
	defer cancel()
	closed := make(chan struct{})
	go func() {
		// The client sends nothing after its hello: any read's end is its close.
		defer close(closed)
		defer cancel()
		io.Copy(io.Discard, bc.r)
	}()
	err := bc.fs.s.svc.watchReadiness(ctx, func(u *rlmmpb.ReadinessUpdate) error {
		out, start := brokerframe.Begin(bc.out[:0])
		out, err := proto.MarshalOptions{}.MarshalAppend(out, u)
		if err != nil {
			return err
		}
		bc.out = brokerframe.End(out, start)
		_, err = bc.c.Write(bc.out)
		return err
	})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, rlmm.ErrClosed) {
		bc.fs.s.logger.Debug("server: a readiness watch ended", "error", err)
	}
	bc.c.Close() // ends the reader above
	<-closed
}

// frameID reads the id (field 1, a varint) of an encoded request that does
// not decode as a whole, as far as its bytes go (0 when they do not reach
// it), so the caller's error reply still names the request.
func frameID(raw []byte) uint64 {
	for b := raw; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0
		}
		b = b[n:]
		if num == 1 && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return 0
			}
			return v
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return 0
		}
		b = b[m:]
	}
	return 0
}
