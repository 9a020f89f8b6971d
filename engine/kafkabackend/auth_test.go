package kafkabackend

import (
	"testing"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/log/kafka"
	"github.com/twmb/franz-go/pkg/kfake"
)

// The backend authenticates with SASL/SCRAM to both Kafka implementations;
// a wrong password fails New with the brokers named.
func TestBackend_SASLScram(t *testing.T) {
	scramListener := func(t *testing.T) []string {
		l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		creds := map[string]kafka.ScramCredential{}
		for _, m := range []string{kafka.ScramSHA256, kafka.ScramSHA512} {
			c, err := kafka.NewScramCredential(m, "s3cret", 0)
			if err != nil {
				t.Fatal(err)
			}
			creds[m] = c
		}
		srv, err := kafka.Listen(t.Context(), "127.0.0.1:0", l, kafka.Options{Logger: quiet(),
			SASLScram: func(m, user string) (kafka.ScramCredential, bool) { c, ok := creds[m]; return c, ok && user == "alice" }})
		if err != nil {
			l.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close(); l.Close() })
		return []string{srv.Addr().String()}
	}
	scramKfake := func(t *testing.T) []string {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
			kfake.Superuser(SASLScramSHA256, "alice", "s3cret"), kfake.Superuser(SASLScramSHA512, "alice", "s3cret"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c.ListenAddrs()
	}
	for _, k := range []struct {
		name  string
		start func(t *testing.T) []string
	}{{"listener", scramListener}, {"kfake", scramKfake}} {
		t.Run(k.name, func(t *testing.T) {
			addrs := k.start(t)
			for _, mech := range []string{SASLScramSHA256, SASLScramSHA512} {
				b, err := New(t.Context(), Options{Brokers: addrs, Logger: quiet(), SASLMechanism: mech, SASLUser: "alice", SASLPassword: "s3cret"})
				if err != nil {
					t.Fatalf("%s: %v", mech, err)
				}
				err = b.Produce(t.Context(), []connect.Record{{Topic: "secured", Value: []byte(mech)}})
				b.Close()
				if err != nil {
					t.Fatalf("%s: produce: %v", mech, err)
				}
			}
			if b, err := New(t.Context(), Options{Brokers: addrs, Logger: quiet(), SASLMechanism: SASLScramSHA256, SASLUser: "alice", SASLPassword: "wrong"}); err == nil {
				b.Close()
				t.Fatal("a wrong password was accepted")
			}
		})
	}
}
