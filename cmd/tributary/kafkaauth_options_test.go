package main

import (
	"testing"

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
