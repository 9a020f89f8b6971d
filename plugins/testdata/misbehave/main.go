// Command misbehave is a plugin for the plugins package's tests: a sink
// whose Write hangs, crashes, fails, retries until stopped or works, as its
// "mode" setting says. Its spec has what only a Go value can carry: a
// Redact (the password of its "url"), an Exclusive parameter ("out") and
// bounds ("retry.wait"). With
// TRIBUTARY_TEST_PROTOCOL set, it completes the handshake with that
// protocol version instead, as a plugin built for another version would.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/plugins"
)

func main() {
	if v := os.Getenv("TRIBUTARY_TEST_PROTOCOL"); v != "" {
		n, _ := strconv.Atoi(v)
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: goplugin.HandshakeConfig{ProtocolVersion: uint(n),
				MagicCookieKey: plugins.MagicCookieKey, MagicCookieValue: plugins.MagicCookieValue},
			Plugins:    goplugin.PluginSet{"connector": nothing{}},
			GRPCServer: goplugin.DefaultGRPCServer,
		})
		return
	}
	plugins.Serve(connect.Connector{
		Name: "misbehave", Kind: connect.KindSink, Version: "0.0.1",
		Description: "A sink that hangs or crashes on demand.",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "mode", Type: connect.TypeString, Enum: []string{"ok", "hang", "crash", "exit", "permanent", "gaveup", "stubborn"}, Default: "ok",
				Description: "What Write does: exit prints a line to os.Stderr and exits with status 3; permanent fails with an error marked Permanent (and Retryable, which Permanent overrides) after 2 tries; gaveup fails the first record after 4 tries; stubborn appends each record's value to out, and retries a record whose value is poison until the task is asked to stop (connect.Stopping)."},
			{Name: "url", Type: connect.TypeString, Description: "A URL, used for nothing; the password of its user info is secret."},
			{Name: "out", Type: connect.TypeString, Exclusive: true, Description: "The file stubborn appends to, one line per record, and a line \"try N\" per retry."},
			{Name: "retry.wait", Type: connect.TypeDuration, Min: "1ms", Max: "1s", Default: "10ms", Description: "The wait between stubborn's tries."},
		}, Redact: redact},
		NewSink: func() connect.Sink { return &sink{} },
	})
}

type nothing struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (nothing) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return nil }
func (nothing) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}

// redact masks the password of url's user info.
func redact(name, value string) string {
	if name != "url" {
		return value
	}
	u, err := url.Parse(value)
	if err != nil || u.User == nil {
		return value
	}
	pass, ok := u.User.Password()
	if !ok || pass == "" {
		return value
	}
	return strings.Replace(value, ":"+pass+"@", ":"+connect.Masked+"@", 1)
}

type sink struct {
	mode string
	out  string
	wait time.Duration
}

func (s *sink) Open(_ context.Context, cfg connect.Config) error {
	mode, err := cfg.String("mode")
	if err != nil {
		return err
	}
	s.mode = mode
	if s.out, err = cfg.String("out"); err != nil {
		return err
	}
	if s.wait, err = cfg.Duration("retry.wait"); err != nil {
		return err
	}
	fmt.Println("hello on stdout")
	fmt.Fprintln(os.Stderr, "hello on stderr")
	slog.Info("opened", "mode", mode)
	slog.Info("configured", "config", cfg)
	return nil
}

func (s *sink) Write(ctx context.Context, recs []connect.Record) error {
	switch s.mode {
	case "stubborn":
		return s.stubborn(ctx, recs)
	case "hang":
		slog.Warn("hanging now, ignoring the context")
		select {}
	case "crash":
		panic(fmt.Sprintf("boom after %d records", len(recs)))
	case "exit":
		fmt.Fprintln(os.Stderr, "cannot reach the backend: giving up")
		os.Exit(3)
	case "permanent":
		return connect.Permanent(connect.WithAttempts(2, connect.Retryable(errors.New("role tributary lacks the grant"))))
	case "gaveup":
		return connect.BadRecordAt(0, connect.WithAttempts(4, errors.New("gave up after 4 attempts")))
	}
	return nil
}

// stubborn appends the records to out, retrying a poison one every
// retry.wait until the task is asked to stop, as a sink that retries on
// its own does (connect.Stopping).
func (s *sink) stubborn(ctx context.Context, recs []connect.Record) error {
	sctx, cancel := connect.Stopping(ctx)
	defer cancel()
	f, err := os.OpenFile(s.out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for i, r := range recs {
		for try := 1; string(r.Value) == "poison"; try++ {
			if _, err := fmt.Fprintf(f, "try %d\n", try); err != nil {
				return err
			}
			select {
			case <-sctx.Done():
				cause := context.Cause(sctx)
				slog.Info("stubborn gave up", "record", i, "tries", try, "cause", cause.Error())
				return fmt.Errorf("deliver record %d after %d tries: %w", i, try, cause)
			case <-time.After(s.wait):
			}
		}
		if _, err := fmt.Fprintf(f, "%s\n", r.Value); err != nil {
			return err
		}
	}
	return nil
}

func (s *sink) Close(context.Context) error { return nil }
