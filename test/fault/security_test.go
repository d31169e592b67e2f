package fault

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/topicbased"
)

// The SASL_SSL listener of the cluster: SCRAM-SHA-512 users made at format
// time by test/kafkatest (admin, a super user; rlmm; rlmm-noread;
// rlmm-nowrite), a broker certificate from the harness's CA, and the
// StandardAuthorizer with allow.everyone.if.no.acl.found=false. The test
// gives the rlmm principals their ACLs on a fresh metadata topic through
// kadm, as admin over SASL_SSL.

const (
	// secBound bounds every call of the security test that must fail: a
	// refusal must come within it, with its cause.
	secBound = 20 * time.Second
	// secPartitions is the metadata topic's partition count.
	secPartitions = 3
)

// secrets is what must never be printed: every SCRAM password, the
// keystore password, and lines of every private key's PEM body.
type secrets struct {
	users   map[string]string // user -> password
	ca      string            // the cluster's CA file
	secrets []string          // the strings to look for
}

func loadSecrets(t *testing.T, c *cluster) *secrets {
	t.Helper()
	s := &secrets{users: map[string]string{}, ca: filepath.Join(c.security, "ca.pem")}
	f, err := os.Open(filepath.Join(c.security, "users.properties"))
	must(t, err)
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if user, pass, ok := strings.Cut(sc.Text(), "="); ok {
			s.users[user] = pass
			s.secrets = append(s.secrets, pass)
		}
	}
	must(t, sc.Err())
	for _, u := range []string{"admin", "rlmm", "rlmm-noread", "rlmm-nowrite"} {
		if s.users[u] == "" {
			t.Fatalf("users.properties of %s has no password for %s", c.security, u)
		}
	}
	ks, err := os.ReadFile(filepath.Join(c.security, "keystore.password"))
	must(t, err)
	s.secrets = append(s.secrets, strings.TrimSpace(string(ks)))
	for _, key := range []string{"broker.key", "ca.key"} {
		b, err := os.ReadFile(filepath.Join(c.security, key))
		must(t, err)
		s.addKey(b)
	}
	return s
}

// addKey adds the base64 lines of a PEM private key to the secrets.
func (s *secrets) addKey(pemBytes []byte) {
	for line := range strings.SplitSeq(string(pemBytes), "\n") {
		if line = strings.TrimSpace(line); len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			s.secrets = append(s.secrets, line)
		}
	}
}

// scan reports every secret found in text, naming where.
func (s *secrets) scan(t *testing.T, where, text string) {
	t.Helper()
	for _, secret := range s.secrets {
		if strings.Contains(text, secret) {
			t.Errorf("%s contains a secret (%d characters starting %.4s...)", where, len(secret), secret)
		}
	}
}

// secConfig is the kafkalog configuration of user over SASL_SSL.
func secConfig(c *cluster, s *secrets, topic, user, password, ca string, logger *slog.Logger) kafkalog.Config {
	return kafkalog.Config{
		BootstrapServers: c.sasl, Topic: topic, NumPartitions: secPartitions, SkipTopicCreation: true,
		TLSCAFile: ca, SASLMechanism: kafkalog.SASLScramSHA512, SASLUser: user, SASLPassword: password,
		ConnectTimeout: secBound, ConsumeWait: secBound, Logger: logger,
	}
}

// secAdmin is a kadm client of the admin user over SASL_SSL.
func secAdmin(t *testing.T, c *cluster, s *secrets) *kadm.Client {
	t.Helper()
	pem, err := os.ReadFile(s.ca)
	must(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.sasl...),
		kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
		kgo.SASL(scram.Auth{User: "admin", Pass: s.users["admin"]}.AsSha512Mechanism()))
	must(t, err)
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// grant gives user the operations on topic (and reports any failure).
func grant(t *testing.T, adm *kadm.Client, topic, user string, ops ...kadm.ACLOperation) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := kadm.NewACLs().Allow("User:" + user).AllowHosts().Topics(topic).ResourcePatternType(kadm.ACLPatternLiteral).Operations(ops...)
	res, err := adm.CreateACLs(ctx, b)
	must(t, err)
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("granting %v on %s to %s: %v", ops, topic, user, r.Err)
		}
	}
}

// grantIdempotentWrite gives user IDEMPOTENT_WRITE on the cluster until
// the end of the test (a cluster ACL outlives the test's topic).
func grantIdempotentWrite(t *testing.T, adm *kadm.Client, user string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := kadm.NewACLs().Allow("User:" + user).AllowHosts().Clusters().ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpIdempotentWrite)
	res, err := adm.CreateACLs(ctx, b)
	must(t, err)
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("granting IDEMPOTENT_WRITE on the cluster to %s: %v", user, r.Err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if _, err := adm.DeleteACLs(ctx, b); err != nil {
			t.Errorf("removing IDEMPOTENT_WRITE of %s: %v", user, err)
		}
	})
}

// endOffsets returns the topic's end offsets, read as admin.
func endOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	lo, err := adm.ListEndOffsets(ctx, topic)
	must(t, err)
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s-%d: %v", topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// buildRLMM builds the rlmm command into dir.
func buildRLMM(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "rlmm")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/rlmm")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/rlmm: %v\n%s", err, out)
	}
	return bin
}

// cliRun is one run of the rlmm command.
type cliRun struct {
	args           []string
	stdout, stderr string
	exit           int
	took           time.Duration
}

// runCLI runs the rlmm command with args and extra environment.
func runCLI(t *testing.T, bin string, env []string, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := cliRun{args: args, stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.exit = exit.ExitCode()
	case err != nil:
		t.Fatalf("rlmm %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// unknownCA writes a CA certificate the cluster's certificate was not
// signed by, and returns its file and the PEM of its key.
func unknownCA(t *testing.T) (string, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "some other CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	file := filepath.Join(t.TempDir(), "other-ca.pem")
	must(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	must(t, err)
	return file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// TestSecurityEndToEnd: the right credentials and ACLs work end to end (the
// manager over kafkalog, rlmm inspect --kafka, rlmm verify --kafka over
// SASL_SSL); a wrong password, an unknown CA, a principal without WRITE and
// one without READ each fail within their bound with an error naming the
// cause and leave the topic as it was; no secret appears in any log line,
// error, --help or JSON output.
func TestSecurityEndToEnd(t *testing.T) {
	c := requireCluster(t)
	checkNoLeak(t)
	s := loadSecrets(t, c)
	adm := secAdmin(t, c, s)
	topic := uniqueTopic(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	minISR := "2"
	created, err := adm.CreateTopic(ctx, secPartitions, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	must(t, err)
	must(t, created.Err)
	read, write, describe := kadm.OpRead, kadm.OpWrite, kadm.OpDescribe
	grant(t, adm, topic, "rlmm", read, write, describe)
	grant(t, adm, topic, "rlmm-nowrite", read, describe)
	grant(t, adm, topic, "rlmm-noread", write, describe)

	logs := newCaptureLog()
	logger := slog.New(logs)
	var errorsSeen []string
	bin := buildRLMM(t, t.TempDir())
	var outputs []cliRun

	// 1. The right credentials: the manager adds and finishes segments.
	tps := userPartitions(t, secPartitions, secPartitions)
	func() {
		l, err := kafkalog.Open(ctx, secConfig(c, s, topic, "rlmm", s.users["rlmm"], s.ca, logger))
		must(t, err)
		defer func() { _ = l.Close() }()
		m, err := topicbased.Start(ctx, topicbased.Config{Log: l, ConsumeWait: secBound, Logger: logger})
		must(t, err)
		defer func() { must(t, m.Close()) }()
		assign(t, m, tps...)
		for i, tp := range tps {
			md := segment(tp, uuidN(uint64(time.Now().UnixNano()%1e12)+uint64(i)), 0)
			must(t, m.AddSegment(ctx, md))
			must(t, m.UpdateSegment(ctx, update(md, rlmm.CopySegmentFinished)))
			got, ok, err := m.SegmentForOffset(tp, 0, 50)
			if err != nil || !ok || got.ID != md.ID || got.State != rlmm.CopySegmentFinished {
				t.Fatalf("read back over SASL_SSL: %v, %v, %v; want %s finished", got, ok, err, md.ID)
			}
		}
	}()
	before := endOffsets(t, adm, topic)
	t.Logf("right credentials and ACLs (user rlmm, READ+WRITE+DESCRIBE): the manager added and finished %d segments over SASL_SSL; end offsets %v", len(tps), before)

	// The command line: inspect (password from the environment) and
	// verify (password as a flag), both with --json.
	common := []string{"--kafka", strings.Join(c.sasl, ","), "--kafka-topic", topic, "--tls-ca", s.ca,
		"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "rlmm", "--json", "--quiet", "--timeout", "20s"}
	insp := runCLI(t, bin, []string{kafkalog.PasswordEnv + "=" + s.users["rlmm"]}, append([]string{"inspect", "--segments"}, common...)...)
	ver := runCLI(t, bin, nil, append([]string{"verify", "--sasl-password", s.users["rlmm"]}, common...)...)
	outputs = append(outputs, insp, ver)
	if insp.exit != 0 || ver.exit != 0 {
		t.Fatalf("inspect exit %d (stderr %s), verify exit %d (stderr %s)", insp.exit, insp.stderr, ver.exit, ver.stderr)
	}
	var vj struct {
		OK     bool `json:"ok"`
		Counts struct {
			Finished int `json:"finished"`
		} `json:"counts"`
	}
	if err := json.Unmarshal([]byte(ver.stdout), &vj); err != nil || !vj.OK {
		t.Fatalf("verify --json: %v, ok=%v\n%s", err, vj.OK, ver.stdout)
	}
	if !strings.Contains(insp.stdout, "COPY_SEGMENT_FINISHED") {
		t.Fatalf("inspect --segments --json does not show the finished segments:\n%s", insp.stdout)
	}
	t.Logf("rlmm inspect --kafka and rlmm verify --kafka over SASL_SSL: exit 0 (%s, %s); verify ok", insp.took.Round(time.Millisecond), ver.took.Round(time.Millisecond))

	// 2. What must fail: each within its bound, naming the cause, leaving
	// the topic as it was.
	otherCA, otherKey := unknownCA(t)
	s.addKey(otherKey)
	cases := []struct {
		name, user, password, ca string
		// op is what fails: "open" (kafkalog.Open), "write" (a mutation),
		// "read" (readiness of a partition with records).
		op    string
		cause string
		// setup runs first (more ACLs).
		setup func(t *testing.T)
	}{
		{"wrong password", "rlmm", s.users["rlmm"] + "x", s.ca, "open", "SASL_AUTHENTICATION_FAILED", nil},
		{"unknown CA", "rlmm", s.users["rlmm"], otherCA, "open", "certificate signed by unknown authority", nil},
		// Without WRITE on any topic the idempotent producer's
		// InitProducerId is refused (KIP-679) before any produce.
		{"no WRITE on the metadata topic", "rlmm-nowrite", s.users["rlmm-nowrite"], s.ca, "write", "CLUSTER_AUTHORIZATION_FAILED", nil},
		// With IDEMPOTENT_WRITE on the cluster, the produce itself is refused.
		{"no WRITE on the metadata topic but IDEMPOTENT_WRITE", "rlmm-nowrite", s.users["rlmm-nowrite"], s.ca, "write", "TOPIC_AUTHORIZATION_FAILED",
			func(t *testing.T) { grantIdempotentWrite(t, adm, "rlmm-nowrite") }},
		// The manager's readiness timeout names this cause since the pump
		// keeps its last Poll error (docs/RELIABILITY.md, defect 1).
		{"no READ on the metadata topic", "rlmm-noread", s.users["rlmm-noread"], s.ca, "read", "TOPIC_AUTHORIZATION_FAILED", nil},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			took, err := secFailure(ctx, t, c, s, topic, tc.user, tc.password, tc.ca, tc.op, tps, logger)
			if err == nil {
				t.Fatalf("%s: %s succeeded", tc.name, tc.op)
			}
			errorsSeen = append(errorsSeen, err.Error())
			t.Logf("%s: %s failed after %s: %v", tc.name, tc.op, took.Round(time.Millisecond), err)
			if took > secBound+boundSlack {
				t.Errorf("%s: took %s, bound %s", tc.name, took, secBound)
			}
			if !strings.Contains(err.Error(), tc.cause) {
				t.Errorf("%s: the error does not name the cause (%q): %v", tc.name, tc.cause, err)
			}
			// A denied write appended nothing, and the mutation says so.
			if tc.op == "write" && (topicbased.MayBeRecorded(err) || !strings.Contains(err.Error(), "nothing was appended")) {
				t.Errorf("%s: MayBeRecorded %v, want false and the error saying nothing was appended: %v", tc.name, topicbased.MayBeRecorded(err), err)
			}
			if after := endOffsets(t, adm, topic); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("%s: end offsets went from %v to %v", tc.name, before, after)
			}
			// The command line with the same credentials.
			args := []string{"verify", "--kafka", strings.Join(c.sasl, ","), "--kafka-topic", topic, "--tls-ca", tc.ca,
				"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", tc.user, "--sasl-password", tc.password, "--json", "--quiet", "--timeout", "20s"}
			r := runCLI(t, bin, nil, args...)
			outputs = append(outputs, r)
			t.Logf("%s: rlmm verify --kafka: exit %d after %s: %s", tc.name, r.exit, r.took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
			if tc.op != "write" && r.exit == 0 {
				t.Errorf("%s: rlmm verify succeeded", tc.name)
			}
			if r.took > secBound+boundSlack+5*time.Second {
				t.Errorf("%s: rlmm verify took %s", tc.name, r.took)
			}
		})
	}

	// 3. No secret anywhere: logs, errors, --help, the outputs.
	for _, sub := range []string{"inspect", "verify"} {
		h := runCLI(t, bin, []string{kafkalog.PasswordEnv + "=" + s.users["rlmm"]}, sub, "--help", "--sasl-password", s.users["rlmm"])
		outputs = append(outputs, h)
	}
	s.scan(t, "the captured log lines", logs.String())
	s.scan(t, "the errors", strings.Join(errorsSeen, "\n"))
	for _, r := range outputs {
		s.scan(t, fmt.Sprintf("stdout of rlmm %s", r.args[0]), r.stdout)
		s.scan(t, fmt.Sprintf("stderr of rlmm %s", r.args[0]), r.stderr)
	}
	t.Logf("secret scan: %d secrets (4 SCRAM passwords, the keystore password, %d lines of 3 private keys) looked for in %d bytes of log, %d errors and %d command outputs (inspect, verify, --json, --help)",
		len(s.secrets), len(s.secrets)-5, len(logs.String()), len(errorsSeen), len(outputs))
}

// secFailure runs the operation op as user and returns its error and how
// long it took.
func secFailure(ctx context.Context, t *testing.T, c *cluster, s *secrets, topic, user, password, ca, op string, tps []rlmm.TopicIDPartition, logger *slog.Logger) (time.Duration, error) {
	start := time.Now()
	l, err := kafkalog.Open(ctx, secConfig(c, s, topic, user, password, ca, logger))
	if err != nil || op == "open" {
		if l != nil {
			_ = l.Close()
		}
		return time.Since(start), err
	}
	defer func() { _ = l.Close() }()
	m, err := topicbased.Start(ctx, topicbased.Config{Log: l, ConsumeWait: secBound, Logger: logger})
	if err != nil {
		return time.Since(start), err
	}
	defer func() { _ = m.Close() }()
	start = time.Now()
	if err := m.OnPartitionLeadershipChanges(ctx, tps, nil); err != nil {
		return time.Since(start), err
	}
	if op == "read" {
		// Every partition has records, so readiness needs a fetch.
		bounded, cancel := context.WithTimeout(ctx, secBound)
		defer cancel()
		err := m.WaitReady(bounded, tps[0])
		return time.Since(start), err
	}
	if err := m.WaitReady(ctx, tps[0]); err != nil {
		return time.Since(start), fmt.Errorf("a principal with READ could not get ready: %w", err)
	}
	md := segment(tps[0], uuidN(uint64(time.Now().UnixNano()%1e12)), 5)
	err = m.AddSegment(ctx, md)
	return time.Since(start), err
}
