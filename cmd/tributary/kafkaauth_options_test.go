package main

import (
	"testing"
	"time"

	"github.com/tributary-io/tributary/pipelines"
)

// TestKafkaListenerOptions_AutoCreate: log.kafka.auto_create_topics: false
// reaches the listener.
func TestKafkaListenerOptions_AutoCreate(t *testing.T) {
	for _, off := range []bool{false, true} {
		opts, err := kafkaListenerOptions(pipelines.Kafka{Listen: "127.0.0.1:0", NoAutoCreateTopics: off})
		if err != nil {
			t.Fatal(err)
		}
		if opts.DisableAutoCreate != off {
			t.Errorf("NoAutoCreateTopics %v: DisableAutoCreate %v", off, opts.DisableAutoCreate)
		}
	}
}

// TestKafkaBackendOptions_SessionTimeout: log.kafka.session_timeout reaches
// the kafka backend, with heartbeats a third of it apart (at most 3 s).
func TestKafkaBackendOptions_SessionTimeout(t *testing.T) {
	for _, tc := range []struct{ session, heartbeat time.Duration }{
		{0, 0}, {6 * time.Second, 2 * time.Second}, {10 * time.Second, 3 * time.Second}, {time.Minute, 3 * time.Second},
	} {
		opts, err := kafkaBackendOptions(pipelines.Kafka{Brokers: []string{"k:9092"}, SessionTimeout: tc.session})
		if err != nil {
			t.Fatal(err)
		}
		if opts.SessionTimeout != tc.session || opts.HeartbeatInterval != tc.heartbeat {
			t.Errorf("session_timeout %s: SessionTimeout %s, HeartbeatInterval %s; want %s, %s", tc.session, opts.SessionTimeout, opts.HeartbeatInterval, tc.session, tc.heartbeat)
		}
	}
}
