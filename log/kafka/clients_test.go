package kafka

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tlog "github.com/tributary-io/tributary/log"
)

// Tests with clients other people wrote: kcat (librdkafka) and kafkajs.

func runCmd(t *testing.T, timeout time.Duration, stdin string, name string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// needKcat returns kcat's path, installing Debian's package when it is
// missing and the tests run as root. It fails the test when kcat cannot be
// had, unless TRIBUTARY_SKIP_KCAT=1 says to skip (say, on a machine
// without Debian's repositories).
func needKcat(t *testing.T) string {
	t.Helper()
	kcatOnce.Do(func() {
		if _, err := exec.LookPath("kcat"); err == nil || os.Getuid() != 0 {
			return
		}
		if _, err := exec.LookPath("apt-get"); err != nil {
			return
		}
		out, err := exec.Command("sh", "-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat").CombinedOutput()
		if err != nil {
			kcatInstall = fmt.Sprintf("apt-get install kcat: %v\n%s", err, out)
		}
	})
	kcat, err := exec.LookPath("kcat")
	if err == nil {
		return kcat
	}
	if os.Getenv("TRIBUTARY_SKIP_KCAT") == "1" {
		t.Skip("kcat is not installed and TRIBUTARY_SKIP_KCAT=1: skipping the kcat test")
	}
	t.Fatalf("kcat is not installed and could not be installed (%s); install it (apt-get install -y kcat), or set TRIBUTARY_SKIP_KCAT=1 to skip the kcat tests", kcatInstall)
	return ""
}

var (
	kcatOnce    sync.Once
	kcatInstall = "not root, or no apt-get"
)

func TestKcat(t *testing.T) {
	kcat := needKcat(t)
	ts := startServer(t)
	if err := ts.log.CreateTopic("kc", 1, nil); err != nil {
		t.Fatal(err)
	}
	b := []string{"-b", ts.addr}

	out, _ := runCmd(t, 10*time.Second, "", kcat, append(b, "-L")...)
	if !strings.Contains(out, `topic "kc" with 1 partitions`) || !strings.Contains(out, "1 brokers") {
		t.Fatalf("kcat -L:\n%s", out)
	}

	var in strings.Builder
	for i := range 10 {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	runCmd(t, 15*time.Second, in.String(), kcat, append(b, "-P", "-t", "kc", "-K:")...)
	res, err := ts.log.Read(t.Context(), "kc", 0, 0, tlog.ReadOptions{})
	if err != nil || len(res.Records) != 10 || string(res.Records[3].Key) != "k3" || string(res.Records[3].Value) != "v3" {
		t.Fatalf("log after kcat -P: %v, %d records", err, len(res.Records))
	}

	out, stderr := runCmd(t, 15*time.Second, "", kcat, append(b, "-C", "-t", "kc", "-o", "-5", "-e", "-f", `%k=%s@%o\n`)...)
	want := "k5=v5@5\nk6=v6@6\nk7=v7@7\nk8=v8@8\nk9=v9@9\n"
	if out != want {
		t.Fatalf("kcat -C -o -5 -e:\n%s\nwant:\n%s\nstderr:\n%s", out, want, stderr)
	}
	if !strings.Contains(stderr, "Reached end of topic kc [0] at offset 10") {
		t.Fatalf("kcat -e did not report the end:\n%s", stderr)
	}

	// A balanced consumer group: kcat joins, consumes all and commits.
	out, _ = runCmd(t, 30*time.Second, "", kcat, append(b, "-G", "kcat-group", "-c", "10", "-f", `%s\n`,
		"-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=6000", "-X", "enable.auto.commit=true", "kc")...)
	if got := strings.Count(out, "\n"); got != 10 {
		t.Fatalf("kcat -G consumed %d records:\n%s", got, out)
	}
	waitFor(t, "kcat's group commit", 10*time.Second, func() bool {
		off, ok := ts.log.Groups().CommittedOffset("kcat-group", "kc", 0)
		return ok && off == 10
	})
}

const kafkajsScript = `
const { Kafka, logLevel } = require('kafkajs');
const kafka = new Kafka({ clientId: 'js', brokers: [process.env.BROKER], logLevel: logLevel.NOTHING });
(async () => {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'js', numPartitions: 2 }] });
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  const messages = [];
  for (let i = 0; i < 20; i++) messages.push({ key: 'k' + i, value: 'v' + i });
  await producer.send({ topic: 'js', messages });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: 'js-group', sessionTimeout: 10000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'js', fromBeginning: true });
  const seen = new Set();
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out with ' + seen.size + ' records')), 20000);
    consumer.run({ eachMessage: async ({ message }) => {
      seen.add(message.value.toString());
      if (seen.size === 20) { clearTimeout(timer); resolve(); }
    }}).catch(reject);
  });
  await consumer.disconnect();
  console.log('consumed ' + seen.size);
})().catch((e) => { console.error(e); process.exit(1); });
`

func TestKafkajs(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed: the kafkajs test needs node and npm")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	install := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", dir, "kafkajs@2")
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("npm cannot install kafkajs (is the npm registry reachable?): %v\n%s", err, out)
	}
	script := filepath.Join(dir, "test.js")
	if err := os.WriteFile(script, []byte(kafkajsScript), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t)
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BROKER="+ts.addr)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "consumed 20") {
		t.Fatalf("kafkajs: %v\n%s", err, out)
	}
	waitFor(t, "kafkajs's group commit", 10*time.Second, func() bool {
		total := int64(0)
		for _, c := range ts.log.Groups().Committed("js-group") {
			total += c.Offset
		}
		return total == 20
	})
}
