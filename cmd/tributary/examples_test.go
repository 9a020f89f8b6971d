package main

import (
	"maps"
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/pipelines"
)

// TestExamples_Validate loads every example pipeline with the binary's
// catalog, so an example never drifts from the connectors it names.
func TestExamples_Validate(t *testing.T) {
	files, err := filepath.Glob("../../examples/*/pipeline.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example pipelines found: %v", err)
	}
	env := map[string]string{"TRACKING_WRITE_KEY": "example-key"}
	lookup := func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
	for _, f := range files {
		// Plugin pipelines name connectors the binary does not have built
		// in; their own tests build the plugins and validate them.
		if p, err := pipelines.LoadFile(f, pipelines.Options{LookupEnv: lookup}); err == nil && len(p.Plugins.Dirs) > 0 {
			continue
		}
		_, err := pipelines.LoadFile(f, pipelines.Options{Catalog: newCatalog(), LookupEnv: lookup})
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestExamples_DefaultDataDirsDoNotMix: the examples a new user runs one
// after the other from the repository's root, each with its default data
// directory, do not reach into one another's log. Two examples on one
// directory must not share a connector name or a consumer group (a sink
// would start from the other's offsets), and a sink of one must not read a
// topic that another writes (it would deliver the other's records, as the
// quickstart's synthetic events into the web-tracking lake).
func TestExamples_DefaultDataDirsDoNotMix(t *testing.T) {
	files, err := filepath.Glob("../../examples/*/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example pipelines found: %v", err)
	}
	lookup := exampleEnv(nil) // the default directories are what is checked
	type use struct{ example, what string }
	byDir := map[string]map[string]use{} // dir → "name x", "group x", "writes t", "reads t" → first user
	reported := map[string]bool{}        // pairs of examples
	for _, f := range files {
		p, err := pipelines.LoadFile(f, pipelines.Options{LookupEnv: lookup})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if p.Log.Backend == pipelines.BackendKafka {
			continue
		}
		dir := filepath.Clean(p.Log.Dir)
		example := filepath.Base(filepath.Dir(f))
		if byDir[dir] == nil {
			byDir[dir] = map[string]use{}
		}
		seen := byDir[dir]
		// claim records what the example does as key, and reports the
		// first thing of another example in the same directory that
		// clashes with it.
		claim := func(key, what string, clashes ...string) {
			for _, c := range clashes {
				if u, ok := seen[c]; ok && u.example != example && !reported[u.example+" "+example] {
					reported[u.example+" "+example] = true
					t.Errorf("%s and examples/%s both use the default data directory %s, where %s and %s: give one a directory of its own, as the quickstart's ./data/quickstart", f, u.example, dir, what, u.what)
				}
			}
			if _, ok := seen[key]; !ok {
				seen[key] = use{example, what}
			}
		}
		for _, s := range p.Sources {
			claim("name "+s.Name, "source "+s.Name+" is named", "name "+s.Name)
			claim("writes "+s.Topic, "source "+s.Name+" writes "+s.Topic, "reads "+s.Topic)
		}
		for _, s := range p.Sinks {
			claim("name "+s.Name, "sink "+s.Name+" is named", "name "+s.Name)
			claim("group "+s.Group, "sink "+s.Name+" commits as group "+s.Group, "group "+s.Group)
			for _, topic := range s.Topics {
				claim("reads "+topic, "sink "+s.Name+" reads "+topic, "writes "+topic)
			}
		}
	}
}

// TestExamples_DataDirFromEnv: as the README says, every example on the
// embedded log takes its log.dir from TRIBUTARY_DATA_DIR, so that the
// variable moves an example's data the way it moves the log commands'.
func TestExamples_DataDirFromEnv(t *testing.T) {
	files, err := filepath.Glob("../../examples/*/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example pipelines found: %v", err)
	}
	const dir = "/elsewhere/tributary-data"
	lookup := exampleEnv(map[string]string{envDataDir: dir})
	for _, f := range files {
		p, err := pipelines.LoadFile(f, pipelines.Options{LookupEnv: lookup})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if p.Log.Backend == pipelines.BackendEmbedded && p.Log.Dir != dir {
			t.Errorf("%s: log.dir is %q with TRIBUTARY_DATA_DIR=%s; want ${TRIBUTARY_DATA_DIR:-…}", f, p.Log.Dir, dir)
		}
	}
}

// exampleEnv looks up the environment variables that the example pipelines
// require and have no default for, and those of set.
func exampleEnv(set map[string]string) func(string) (string, bool) {
	env := map[string]string{
		"TRACKING_WRITE_KEY": "example-key", "PG_DSN": "postgres://u@localhost/shop",
		"HUBSPOT_TOKEN": "t", "SF_INSTANCE_URL": "https://example.my.salesforce.com", "SF_ACCESS_TOKEN": "t",
	}
	maps.Copy(env, set)
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}
