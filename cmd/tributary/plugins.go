package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/plugins"
)

// defaultPluginsDir is where plugin connectors are looked for when no
// --plugins-dir is given.
const defaultPluginsDir = "./plugins"

// The plugins commands inspect plugin directories; they start each plugin
// briefly to ask what it is.
func newPluginsCmd(a *app) *cobra.Command {
	var dirs []string
	var markdown bool
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "List and inspect plugin connectors in plugin directories",
	}
	cmd.PersistentFlags().StringSliceVar(&dirs, "plugins-dir", []string{defaultPluginsDir}, "directory of plugin connectors (repeat or comma-separate for several)")
	discover := func(cmd *cobra.Command) ([]*plugins.Plugin, error) {
		byDefault := !cmd.Flag("plugins-dir").Changed
		var missing []error
		for _, d := range dirs {
			missing = append(missing, pluginDir{path: d, byDefault: byDefault}.checkExists())
		}
		if err := errors.Join(missing...); err != nil {
			return nil, err
		}
		h := plugins.NewHost(plugins.Options{Logger: a.logger})
		return h.Discover(cmd.Context(), dirs...)
	}
	list := &cobra.Command{
		Use: "list", Short: "List the plugins: name, kind, version, path, sha256, and why a file is not a usable plugin", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			found, err := discover(cmd)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKIND\tVERSION\tSTATUS\tPATH\tSHA256")
			var invalid []*plugins.Plugin
			for _, p := range found {
				if !p.Valid() && clearlyNotPlugin(p.Path) {
					continue
				}
				name, kind, version, state := dash(p.Name), dash(string(p.Kind)), dash(p.Version), "ok"
				switch {
				case !p.Valid():
					state = "invalid"
					invalid = append(invalid, p)
				case p.Pinned != "":
					state = "ok, pinned"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, kind, version, state, p.Path, dash(p.SHA256))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, p := range invalid {
				fmt.Fprintf(a.stdout, "\n%s is not usable: %v\n", p.Path, p.Err)
			}
			for _, d := range dirs {
				if n := goSourceFiles(d); n > 0 {
					fmt.Fprintf(a.stderr, "%s holds Go source (%d .go files) and no executables: it is not a plugin directory (from the repository's root, ./plugins is the plugin host's source); build plugins into a directory of their own and pass --plugins-dir DIR\n", d, n)
				}
			}
			return nil
		},
	}
	inspect := &cobra.Command{
		Use:   "inspect NAME|PATH",
		Short: "Show a plugin connector and its configuration spec as a table",
		Args:  exactArgs("NAME|PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := findPlugin(cmd, a, dirs, args[0], discover)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 1, ' ', 0)
			for _, row := range [][2]string{
				{"Name", p.Name}, {"Kind", string(p.Kind)}, {"Version", p.Version}, {"Description", p.Description},
				{"Path", p.Path}, {"SHA256", p.SHA256}, {"Pinned", orNo(p.Pinned)},
				{"Implements", strings.Join(implements(p), ", ")}, {"Protocol", protocolNote(p)},
			} {
				fmt.Fprintf(tw, "%s:\t%s\n", row[0], row[1])
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout)
			if markdown {
				_, err := fmt.Fprint(a.stdout, p.Spec.Markdown())
				return err
			}
			return printSpec(a, p.Spec)
		},
	}
	inspect.Flags().BoolVar(&markdown, "markdown", false, "print the spec as a Markdown table, for docs")
	cmd.AddCommand(list, inspect)
	return cmd
}

// pluginDir is a directory to look for plugin connectors in, and where it
// was named.
type pluginDir struct {
	path string
	// file is the pipeline file whose plugins.dirs names the directory;
	// "" for --plugins-dir.
	file string
	// byDefault: the default of --plugins-dir, which the user did not give.
	byDefault bool
}

// checkExists says, of a directory that does not exist, where it was named
// and what to do. Other errors (a directory that may not be read) are left
// to plugins.Discover, which names the chmod that fixes them.
func (d pluginDir) checkExists() error {
	if _, err := os.Stat(d.path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	switch {
	case d.file != "":
		relative := ""
		if !filepath.IsAbs(d.path) {
			if wd, err := os.Getwd(); err == nil {
				relative = fmt.Sprintf(" (a relative path is relative to the directory tributary runs in, %s)", wd)
			}
		}
		return fmt.Errorf("%s: plugins.dirs: plugin directory %s does not exist: build the plugins into it, or correct the path%s", d.file, d.path, relative)
	case d.byDefault:
		return fmt.Errorf("plugin directory %s does not exist (the default of --plugins-dir): give the directory that holds the plugin executables with --plugins-dir DIR", d.path)
	default:
		return fmt.Errorf("plugin directory %s does not exist (--plugins-dir): correct the path, or build the plugins into it", d.path)
	}
}

// implements names what the plugin's connector implements, as its author
// wrote it: the connect interface of its kind, the optional connect
// interfaces the worker calls across the boundary, and Spec.Redact when
// the worker asks the plugin to mask settings.
func implements(p *plugins.Plugin) []string {
	var out []string
	switch p.Kind {
	case connect.KindSource:
		out = append(out, "connect.Source")
	case connect.KindSink:
		out = append(out, "connect.Sink")
	}
	out = append(out, p.Interfaces()...)
	if p.Spec.Redact != nil {
		out = append(out, "connect.Spec.Redact")
	}
	return out
}

// protocolNote is the plugin's protocol version and, when it is older
// than the host's, what an author gains by rebuilding: what the plugin may
// implement but the worker cannot ask about or call at that version.
func protocolNote(p *plugins.Plugin) string {
	if p.Protocol >= plugins.ProtocolVersion {
		return fmt.Sprint(p.Protocol)
	}
	var unused []string
	if p.Protocol < 2 && p.Kind == connect.KindSource {
		unused = append(unused, "connect.DurableNotifier", "connect.TailRecoverer")
	}
	if p.Protocol < 3 {
		unused = append(unused, "connect.Spec.Redact")
		if p.Kind == connect.KindSink {
			unused = append(unused, "connect.Stopping in Write (a stop waits for the Write)")
		}
	}
	return fmt.Sprintf("%d (this Tributary speaks %d to %d; at version %d the worker does not use %s, even when the plugin implements it: rebuild it with a newer github.com/tributary-io/tributary module)",
		p.Protocol, plugins.MinProtocolVersion, plugins.ProtocolVersion, p.Protocol, strings.Join(unused, ", "))
}

// findPlugin returns the usable plugin called name in the directories, or
// the plugin file at name when it is a path.
func findPlugin(cmd *cobra.Command, a *app, dirs []string, name string, discover func(*cobra.Command) ([]*plugins.Plugin, error)) (*plugins.Plugin, error) {
	if strings.ContainsRune(name, '/') {
		p := plugins.NewHost(plugins.Options{Logger: a.logger}).Inspect(cmd.Context(), name)
		if !p.Valid() {
			return nil, p.Err
		}
		return p, nil
	}
	found, err := discover(cmd)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range found {
		if p.Valid() && p.Name == name {
			return p, nil
		}
		if p.Valid() {
			names = append(names, p.Name)
		}
	}
	for _, kind := range []connect.Kind{connect.KindSource, connect.KindSink} {
		if err := plugins.Explain(found, kind, name); err != nil {
			return nil, err
		}
	}
	if len(names) == 0 {
		var why []string
		for _, d := range dirs {
			if n := goSourceFiles(d); n > 0 {
				why = append(why, fmt.Sprintf("%s holds Go source (%d .go files), no plugin executables", d, n))
			}
		}
		if len(why) == 0 {
			why = append(why, "no usable plugins in "+strings.Join(dirs, ", "))
		}
		return nil, fmt.Errorf("no plugin %q: %s; give the directory of the built plugins with --plugins-dir DIR, or the file itself: tributary plugins inspect PATH", name, strings.Join(why, "; "))
	}
	return nil, fmt.Errorf("no plugin %q in %s (plugins there: %s)", name, strings.Join(dirs, ", "), strings.Join(names, ", "))
}

// printSpec prints a spec as a table, one parameter a row.
func printSpec(a *app, spec connect.Spec) error {
	if len(spec.Params) == 0 {
		_, err := fmt.Fprintln(a.stdout, "No parameters.")
		return err
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARAMETER\tTYPE\tDEFAULT\tREQUIRED\tALLOWED\tDESCRIPTION")
	for _, p := range spec.Params {
		typ, def := string(p.Type), p.Default
		if p.IsSecret() {
			typ += " (secret)"
			if def != "" {
				def = connect.Masked
			}
		}
		required := "no"
		if p.Required && p.Default == "" {
			required = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, typ, dash(def), required, dash(strings.Join(p.Enum, ",")),
			strings.Join(strings.Fields(p.Description), " "))
	}
	return tw.Flush()
}

// notPluginExts are the extensions of source and document files: such a
// file that is not executable is clearly not a plugin.
var notPluginExts = []string{".go", ".md", ".proto", ".txt", ".mod", ".sum", ".json", ".yaml", ".yml"}

// clearlyNotPlugin reports whether the file at path is clearly not a
// plugin, so that plugins list leaves it out rather than list it as
// invalid: a directory, or a file that is not executable and whose name
// has a source or document extension. Anything else that is not a usable
// plugin (an executable that does not answer, a binary without the
// executable bit) is listed, with the reason.
func clearlyNotPlugin(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	if fi.IsDir() {
		return true
	}
	return fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 == 0 && slices.Contains(notPluginExts, strings.ToLower(filepath.Ext(path)))
}

// goSourceFiles returns how many .go files dir holds when it looks like a
// Go package's folder rather than a plugin directory: .go files and no
// executable file; else 0.
func goSourceFiles(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return 0
		}
		if strings.HasSuffix(e.Name(), ".go") {
			n++
		}
	}
	return n
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orNo(s string) string {
	if s == "" {
		return "no"
	}
	return s
}
