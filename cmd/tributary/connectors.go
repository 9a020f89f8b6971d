package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// The connectors commands talk to a running worker's REST API (--server).

func newConnectorsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "connectors",
		Short: "List and control the connectors of a running worker (REST API, --server)",
	}
	// simple is a command that sends one request; done is what it prints
	// after the name when the worker took it.
	simple := func(use, short, done, method, suffix string) *cobra.Command {
		return &cobra.Command{
			Use: use + " NAME", Short: short, Args: exactArgs("NAME"),
			RunE: func(cmd *cobra.Command, args []string) error {
				c := a.serverClient()
				if err := c.do(cmd.Context(), method, "/connectors/"+url.PathEscape(args[0])+suffix, nil, nil); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s: %s\n", args[0], done)
				return nil
			},
		}
	}
	var includeTasks, onlyFailed bool
	restart := &cobra.Command{
		Use: "restart NAME", Short: "Restart a connector and its task", Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if includeTasks {
				q.Set("includeTasks", "true")
			}
			if onlyFailed {
				q.Set("onlyFailed", "true")
			}
			path := "/connectors/" + url.PathEscape(args[0]) + "/restart"
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			if len(q) == 0 {
				// Kafka Connect's old form: 204, no answer.
				if err := a.serverClient().do(cmd.Context(), "POST", path, nil, nil); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s: restarting\n", args[0])
				return nil
			}
			// 202 with the status, RESTARTING where an instance restarts.
			var st statusJSON
			if err := a.serverClient().do(cmd.Context(), "POST", path, nil, &st); err != nil {
				return err
			}
			var what []string
			if st.Connector.State == "RESTARTING" {
				what = append(what, "connector")
			}
			for _, t := range st.Tasks {
				if t.State == "RESTARTING" {
					what = append(what, fmt.Sprintf("task %d", t.ID))
				}
			}
			if len(what) == 0 {
				fmt.Fprintf(a.stdout, "%s: nothing restarted (connector %s; with --only-failed only failed instances restart)\n", args[0], st.Connector.State)
				return nil
			}
			fmt.Fprintf(a.stdout, "%s: restarting %s\n", args[0], strings.Join(what, ", "))
			return nil
		},
	}
	restart.Flags().BoolVar(&includeTasks, "include-tasks", true, "restart the tasks too")
	restart.Flags().BoolVar(&onlyFailed, "only-failed", false, "restart only failed tasks")
	var stop, pause, resume bool
	snapshot := &cobra.Command{
		Use:   "snapshot NAME [TABLE...]",
		Short: "Re-snapshot tables of a CDC source while it streams (incremental snapshot); --stop, --pause, --resume",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := "execute-snapshot"
			n := 0
			for flag, k := range map[*bool]string{&stop: "stop-snapshot", &pause: "pause-snapshot", &resume: "resume-snapshot"} {
				if *flag {
					kind, n = k, n+1
				}
			}
			switch {
			case n > 1:
				return usageErrorf(cmd.CommandPath(), "snapshot: give only one of --stop, --pause, --resume")
			case kind == "execute-snapshot" && len(args) < 2:
				return usageErrorf(cmd.CommandPath(), "snapshot: name the tables to re-snapshot, e.g. tributary connectors snapshot %s public.orders", args[0])
			case (pause || resume) && len(args) > 1:
				return usageErrorf(cmd.CommandPath(), "snapshot: --pause and --resume act on the running incremental snapshot; drop the table names")
			}
			body := map[string]any{"type": kind, "data": map[string]any{"data-collections": args[1:], "type": "incremental"}}
			if err := a.serverClient().do(cmd.Context(), "POST", "/connectors/"+url.PathEscape(args[0])+"/signals", body, nil); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s: %s %s\n", args[0], kind, strings.Join(args[1:], " "))
			return nil
		},
	}
	snapshot.Flags().BoolVar(&stop, "stop", false, "stop the incremental snapshot of the tables (all when none given)")
	snapshot.Flags().BoolVar(&pause, "pause", false, "pause the running incremental snapshot (streaming goes on)")
	snapshot.Flags().BoolVar(&resume, "resume", false, "resume a paused incremental snapshot")
	cmd.AddCommand(
		snapshot,
		&cobra.Command{
			Use: "list", Short: "List connectors with their state", Args: noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				var out map[string]struct {
					Status statusJSON `json:"status"`
				}
				if err := a.serverClient().do(cmd.Context(), "GET", "/connectors?expand=status", nil, &out); err != nil {
					return err
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tTYPE\tSTATE\tTASKS")
				for _, name := range sortedKeys(out) {
					st := out[name].Status
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, st.Type, st.Connector.State, st.taskStates())
				}
				return tw.Flush()
			},
		},
		&cobra.Command{
			Use: "status NAME", Short: "Show a connector's status (JSON, as Kafka Connect's)", Args: exactArgs("NAME"),
			RunE: func(cmd *cobra.Command, args []string) error {
				var out json.RawMessage
				if err := a.serverClient().do(cmd.Context(), "GET", "/connectors/"+url.PathEscape(args[0])+"/status", nil, &out); err != nil {
					return err
				}
				return printJSON(a, out)
			},
		},
		simple("pause", "Pause a connector: its task stays assigned but processes nothing", "paused", "PUT", "/pause"),
		simple("resume", "Resume a paused or stopped connector", "resumed", "PUT", "/resume"),
		simple("stop", "Stop a connector: its task shuts down and leaves its group (needed to change offsets)", "stopped", "PUT", "/stop"),
		restart,
		newConnectorOffsetsCmd(a),
	)
	return cmd
}

type statusJSON struct {
	Type      string `json:"type"`
	Connector struct {
		State string `json:"state"`
	} `json:"connector"`
	Tasks []struct {
		ID    int    `json:"id"`
		State string `json:"state"`
	} `json:"tasks"`
}

func (s statusJSON) taskStates() string {
	if len(s.Tasks) == 0 {
		return "-"
	}
	var parts []string
	for _, t := range s.Tasks {
		parts = append(parts, fmt.Sprintf("%d:%s", t.ID, t.State))
	}
	return strings.Join(parts, ",")
}

func printJSON(a *app, raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	_, err := fmt.Fprintln(a.stdout, string(b))
	return err
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// newConnectorOffsetsCmd shows a connector's offsets, or changes those of
// a stopped one as Kafka Connect's PATCH (--set) and DELETE (--reset) of
// /connectors/NAME/offsets do.
func newConnectorOffsetsCmd(a *app) *cobra.Command {
	var reset bool
	var set string
	cmd := &cobra.Command{
		Use:   "offsets NAME [--reset | --set FILE|JSON]",
		Short: "Show a connector's offsets (JSON); --reset or --set them while it is stopped",
		Long: `Show a connector's offsets, as GET /connectors/NAME/offsets does. On a stopped
connector (connectors stop NAME), --reset deletes them (DELETE: a source starts
over, a sink from where its group has no offsets), and --set changes them
(PATCH) to those of a JSON document, given inline or as a file ("-" for stdin):

  {"offsets":[{"partition":{"kafka_topic":"orders","kafka_partition":0},
               "offset":{"kafka_offset":42}}]}

A sink's partitions use kafka_topic and kafka_partition, its offset
kafka_offset; "offset": null resets one partition. The bare list is accepted too.`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/connectors/" + url.PathEscape(args[0]) + "/offsets"
			c := a.serverClient()
			var done struct {
				Message string `json:"message"`
			}
			// The worker answers a change of a running connector's offsets
			// with Kafka Connect's words, which name the REST call only.
			stopFirst := func(err error) error {
				if err != nil && strings.Contains(err.Error(), "must be in the STOPPED state") {
					return &hintError{msg: fmt.Sprintf("%v (CLI: tributary connectors stop %s)", err, args[0]), err: err}
				}
				return err
			}
			switch {
			case reset && set != "":
				return usageErrorf(cmd.CommandPath(), "give one of --reset and --set")
			case reset:
				if err := c.do(cmd.Context(), "DELETE", path, nil, &done); err != nil {
					return stopFirst(err)
				}
			case set != "":
				body, err := a.offsetsDocument(cmd.CommandPath(), set)
				if err != nil {
					return err
				}
				if err := c.do(cmd.Context(), "PATCH", path, body, &done); err != nil {
					return stopFirst(err)
				}
			default:
				var out json.RawMessage
				if err := c.do(cmd.Context(), "GET", path, nil, &out); err != nil {
					return err
				}
				return printJSON(a, out)
			}
			fmt.Fprintf(a.stdout, "%s: %s\n", args[0], done.Message)
			return nil
		},
	}
	cmd.Flags().BoolVar(&reset, "reset", false, "delete the offsets of the stopped connector")
	cmd.Flags().StringVar(&set, "set", "", `set offsets of the stopped connector from JSON, inline or a file ("-": stdin)`)
	return cmd
}

// offsetsDocument reads --set: inline JSON, a file, or "-" for stdin, as
// {"offsets":[...]} or the bare list. A document that is not one is a usage
// error; one that cannot be read is not.
func (a *app) offsetsDocument(cmdPath, v string) (any, error) {
	data := []byte(v)
	if t := strings.TrimSpace(v); !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "[") {
		var err error
		if v == "-" {
			data, err = io.ReadAll(a.stdin)
		} else {
			data, err = os.ReadFile(v)
		}
		if err != nil {
			return nil, fmt.Errorf("--set: %w", err)
		}
	}
	var doc struct {
		Offsets []json.RawMessage `json:"offsets"`
	}
	if t := strings.TrimSpace(string(data)); strings.HasPrefix(t, "[") {
		if err := json.Unmarshal(data, &doc.Offsets); err != nil {
			return nil, usageErrorf(cmdPath, "--set: %v", err)
		}
	} else {
		dec := json.NewDecoder(strings.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			return nil, usageErrorf(cmdPath, "--set: want {\"offsets\":[{\"partition\":{...},\"offset\":{...}}]}: %v", err)
		}
	}
	if len(doc.Offsets) == 0 {
		return nil, usageErrorf(cmdPath, "--set: no offsets given")
	}
	return doc, nil
}
