package gssapi

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"go.uber.org/goleak"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
)

// setupDir is the directory scripts/gssapi-test.sh makes: bootstrap (the
// broker's SASL_SSL GSSAPI listener), krb5.conf, client.keytab, realm, the
// stores and their passwords, and rlmm (the binary TestServeOverGSSAPI runs).
var setupDir = flag.String("gssapi.dir", "", "the directory scripts/gssapi-test.sh made (its KDC's and broker's files)")

// bound bounds every wait of the tests: an Open, a poll for records.
const bound = 60 * time.Second

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		// As in kafkalog's own tests: the fetch manager of a stopped
		// consumer session of franz-go v1.22.3 may outlive its client.
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/twmb/franz-go/pkg/kgo.(*fetchManager).manageFetchConcurrency")); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// setup is what the script made.
type setup struct {
	bootstrap, dir, realm string
}

func requireSetup(t *testing.T) setup {
	t.Helper()
	s := setup{dir: *setupDir}
	if s.dir == "" {
		reason := "no -gssapi.dir: no KDC and GSSAPI broker; scripts/gssapi-test.sh starts them and runs these tests"
		if os.Getenv("CI") == "true" {
			t.Fatal(reason + " (CI=true: scripts/test.sh runs that script)")
		}
		t.Skip(reason)
	}
	s.realm = s.read(t, "realm")
	s.bootstrap = s.read(t, "bootstrap")
	return s
}

func (s setup) path(name string) string { return filepath.Join(s.dir, name) }

func (s setup) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(s.path(name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// props are the Kafka client settings of the GSSAPI listener, as an
// operator writes them (and the plugin forwards them), with the stores of
// one type; principal and keyTab are the JAAS line's.
func (s setup) props(t *testing.T, storeType, principal, keyTab string) map[string]string {
	t.Helper()
	ext := map[string]string{"JKS": "jks", "PKCS12": "p12"}[storeType]
	p := map[string]string{
		"bootstrap.servers":          s.bootstrap,
		"security.protocol":          "SASL_SSL",
		"sasl.mechanism":             "GSSAPI",
		"sasl.kerberos.service.name": "kafka",
		"sasl.jaas.config": fmt.Sprintf(`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="%s" principal="%s";`,
			keyTab, principal),
		"java.security.krb5.conf": s.path("krb5.conf"),
		"ssl.keystore.type":       storeType,
		"ssl.keystore.location":   s.path("client." + ext),
		"ssl.keystore.password":   s.read(t, "store.password"),
		"ssl.truststore.type":     storeType,
		"ssl.truststore.location": s.path("trust." + ext),
		"ssl.truststore.password": s.read(t, "trust.password"),
	}
	if storeType == "JKS" {
		p["ssl.key.password"] = s.read(t, "key.password") // keytool gave the JKS key its own password
	}
	return p
}

func config(t *testing.T, props map[string]string) kafkalog.Config {
	t.Helper()
	// As rlmm serve gets them from the plugin: prefixed.
	prefixed := map[string]string{}
	for k, v := range props {
		prefixed["remote.log.metadata.common.client."+k] = v
	}
	prefixed["remote.log.metadata.topic.num.partitions"] = "3"
	prefixed["remote.log.metadata.topic.replication.factor"] = "1"
	prefixed["remote.log.metadata.topic.min.isr"] = "1"
	cfg, err := kafkalog.ParseProperties(prefixed)
	if err != nil {
		t.Fatalf("ParseProperties: %v", err)
	}
	cfg.Topic = fmt.Sprintf("rlmm-gssapi.%d.%s", time.Now().UnixNano()%1e9, strings.NewReplacer("/", ".", " ", "_").Replace(t.Name()))
	cfg.ConnectTimeout = bound
	return cfg
}

// TestGSSAPIWithStores publishes to every partition, reads the records back
// through a subscription and checks the high-water marks, over SASL_SSL with
// Kerberos, once with JKS stores and once with PKCS12 stores.
func TestGSSAPIWithStores(t *testing.T) {
	s := requireSetup(t)
	for _, storeType := range []string{"JKS", "PKCS12"} {
		t.Run(storeType, func(t *testing.T) {
			cfg := config(t, s.props(t, storeType, "rlmm@"+s.realm, s.path("client.keytab")))
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			l, err := kafkalog.Open(ctx, cfg)
			if err != nil {
				t.Fatalf("Open over GSSAPI with %s stores: %v", storeType, err)
			}
			defer func() { _ = l.Close() }()
			if l.Partitions() != 3 {
				t.Fatalf("%d partitions, want 3", l.Partitions())
			}
			const perPartition = 5
			want := map[int32][]string{}
			for p := range l.Partitions() {
				for i := range perPartition {
					v := fmt.Sprintf("%s-p%d-r%d", storeType, p, i)
					off, err := l.Publish(ctx, p, []byte(v))
					if err != nil {
						t.Fatalf("Publish(%d): %v", p, err)
					}
					if off != int64(i) {
						t.Fatalf("Publish(%d) #%d at offset %d, want %d", p, i, off, i)
					}
					want[p] = append(want[p], v)
				}
			}
			hw, err := l.HighWaterMarks(ctx, []int32{0, 1, 2})
			if err != nil {
				t.Fatalf("HighWaterMarks: %v", err)
			}
			for p, h := range hw {
				if h != perPartition {
					t.Errorf("partition %d: high-water mark %d, want %d", p, h, perPartition)
				}
			}
			sub, err := l.Subscribe(ctx)
			if err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			defer func() { _ = sub.Close() }()
			for p := range l.Partitions() {
				if err := sub.Add(p, 0); err != nil {
					t.Fatal(err)
				}
			}
			got := map[int32][]string{}
			var n int
			for n < perPartition*int(l.Partitions()) {
				recs, err := sub.Poll(ctx)
				if err != nil {
					t.Fatalf("Poll after %d records: %v", n, err)
				}
				for _, r := range recs {
					if r.Offset != int64(len(got[r.Partition])) {
						t.Fatalf("partition %d: offset %d after %d records", r.Partition, r.Offset, len(got[r.Partition]))
					}
					got[r.Partition] = append(got[r.Partition], string(r.Value))
					n++
				}
			}
			for p, vs := range want {
				if strings.Join(got[p], ",") != strings.Join(vs, ",") {
					t.Errorf("partition %d: read %v, want %v", p, got[p], vs)
				}
			}
			var _ eventlog.Log = l
		})
	}
}

// TestGSSAPIRefusals: the broker refuses a principal the KDC does not know
// and a client without a certificate; Open fails (within its bound) rather
// than hanging or succeeding.
func TestGSSAPIRefusals(t *testing.T) {
	s := requireSetup(t)
	// A keytab of a principal the KDC never heard of.
	kt := keytab.New()
	if err := kt.AddEntry("ghost", s.realm, "no such principal", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	data, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ghostKeytab := filepath.Join(t.TempDir(), "ghost.keytab")
	if err := os.WriteFile(ghostKeytab, data, 0o600); err != nil {
		t.Fatal(err)
	}
	noCert := s.props(t, "PKCS12", "rlmm@"+s.realm, s.path("client.keytab"))
	delete(noCert, "ssl.keystore.type")
	delete(noCert, "ssl.keystore.location")
	delete(noCert, "ssl.keystore.password")
	cases := []struct {
		name  string
		props map[string]string
	}{
		{"an unknown principal", s.props(t, "PKCS12", "ghost@"+s.realm, ghostKeytab)},
		{"no client certificate", noCert},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(t, tc.props)
			cfg.ConnectTimeout = 8 * time.Second
			cfg.SkipTopicCreation = true
			l, err := kafkalog.Open(context.Background(), cfg)
			if err == nil {
				_ = l.Close()
				t.Fatal("Open succeeded")
			}
			if errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Fatalf("Open: %v; the settings are valid, the broker or KDC must refuse them", err)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// TestServeOverGSSAPI runs `rlmm serve --properties` as the broker plugin
// does, with the settings (passwords included) in a 0600 properties file:
// its manager comes up over GSSAPI+SASL_SSL with the JKS stores, and its
// command line and environment hold none of the passwords.
func TestServeOverGSSAPI(t *testing.T) {
	s := requireSetup(t)
	bin := s.path("rlmm")
	dir := t.TempDir()
	props := s.props(t, "JKS", "rlmm@"+s.realm, s.path("client.keytab"))
	secrets := []string{props["ssl.keystore.password"], props["ssl.key.password"], props["ssl.truststore.password"]}
	var file strings.Builder
	for k, v := range props {
		fmt.Fprintf(&file, "remote.log.metadata.common.client.%s=%s\n", k, v)
	}
	file.WriteString("remote.log.metadata.topic.num.partitions=3\nremote.log.metadata.topic.replication.factor=1\nremote.log.metadata.topic.min.isr=1\n")
	propsFile := filepath.Join(dir, "serve.properties")
	if err := os.WriteFile(propsFile, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	topic := fmt.Sprintf("rlmm-gssapi-serve.%d", time.Now().UnixNano()%1e9)
	cmd := exec.Command(bin, "serve", "--properties", propsFile, "--kafka-topic", topic, "--socket", filepath.Join(dir, "s.sock"),
		"--snapshot-dir", filepath.Join(dir, "snap"), "--broker-id", "1", "--exit-with-stdin")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	exited := make(chan error, 1)
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var output []string
	stop := func() {
		_ = stdin.Close() // --exit-with-stdin: the end of stdin stops it, as the plugin's death does
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("rlmm serve exited with %v", err)
			}
		case <-time.After(bound):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("rlmm serve did not stop within %s of its stdin closing", bound)
		}
		for l := range lines {
			output = append(output, l)
		}
		_ = pr.Close()
	}
	up := false
	deadline := time.After(bound)
	for !up {
		select {
		case l, ok := <-lines:
			if !ok {
				stop()
				t.Fatalf("rlmm serve exited before its manager came up; its output:\n%s", strings.Join(output, "\n"))
			}
			output = append(output, l)
			up = strings.Contains(l, "serve: manager up")
		case <-deadline:
			stop()
			t.Fatalf("rlmm serve's manager did not come up within %s; its output:\n%s", bound, strings.Join(output, "\n"))
		}
	}
	for _, name := range []string{"cmdline", "environ"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", cmd.Process.Pid, name))
		if err != nil {
			stop()
			t.Fatal(err)
		}
		for _, secret := range secrets {
			if secret == "" || strings.Contains(string(b), secret) {
				t.Errorf("/proc/%d/%s holds a password (or the password is empty)", cmd.Process.Pid, name)
			}
		}
	}
	stop()
	for _, l := range output {
		for _, secret := range secrets {
			if strings.Contains(l, secret) {
				t.Errorf("rlmm serve logged a password: %s", l)
			}
		}
	}
}
