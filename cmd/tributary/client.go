package main

import (
	"errors"
	"fmt"
	"strings"

	tlog "github.com/tributary-io/tributary/log"
)

// logClient is everything the commands need from a log. Each command
// declares the part it uses next to itself (topicAdmin, produceClient,
// consumeClient, groupAdmin); logClient is their sum.
//
// The embedded client (embedded.go) opens the data directory in this
// process. A client for a running worker's REST API (a later --server flag,
// env TRIBUTARY_SERVER) implements the same interface, so the commands stay
// as they are. Implementations return the log package's sentinel errors
// (tlog.ErrUnknownTopic, tlog.ErrTopicExists, ...) so that commands can
// branch on them whatever the transport.
type logClient interface {
	topicAdmin
	produceClient
	consumeClient
	groupAdmin
	// Close releases the client; for the embedded log it flushes and
	// unlocks the data directory.
	Close() error
}

// hintError replaces a terse error's message with one that says what to do,
// keeping the original for errors.Is.
type hintError struct {
	msg string
	err error
}

func (e *hintError) Error() string { return e.msg }
func (e *hintError) Unwrap() error { return e.err }

// withHint adds the fix to the errors users meet most often.
func withHint(err error, topic string) error {
	var notOpened *tlog.TopicNotOpenedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &notOpened):
		return err // it exists: its message says why it is not open
	case errors.Is(err, tlog.ErrUnknownTopic):
		return &hintError{msg: fmt.Sprintf("topic %s does not exist; list topics with `tributary topics list`", topic), err: err}
	case errors.Is(err, tlog.ErrTopicExists):
		return &hintError{msg: fmt.Sprintf("topic %s already exists; change it with `tributary topics alter %s`", topic, topic), err: err}
	case errors.Is(err, tlog.ErrRecordTooLarge):
		return &hintError{msg: fmt.Sprintf("%v; raise the limit with `tributary topics alter %s --config max.message.bytes=N`", err, topic), err: err}
	case errors.Is(err, tlog.ErrTooManyPartitions):
		return &hintError{msg: fmt.Sprintf("%v; the limit is $%s (default %d) of the process that opens the data directory (this command, or `tributary run` behind --server)", err, envMaxPartitions, tlog.DefaultMaxPartitions), err: err}
	case errors.Is(err, tlog.ErrPolicyViolation) && strings.HasSuffix(err.Error(), "cleanup.policy has no delete"):
		return &hintError{msg: fmt.Sprintf("%v; as in Kafka, records are deleted only where cleanup.policy includes delete: tributary topics alter %s --config cleanup.policy=compact,delete", err, topic), err: err}
	case errors.Is(err, tlog.ErrCompactedTopicNilKey):
		return &hintError{msg: fmt.Sprintf("%v; give every record a key with -K DELIM or -k KEY", err), err: err}
	}
	return err
}
