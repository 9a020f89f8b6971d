package pipelines

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Options configure loading.
type Options struct {
	// Catalog lists the connectors and transforms and their config specs.
	// Without one, the loader checks the shape of the file but not the
	// connector and transform names nor their settings: this is how a caller
	// reads plugins.dirs before it has loaded the plugins, to load the file
	// again with a catalog that holds them.
	Catalog Catalog
	// LookupEnv resolves ${VAR} references; nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
}

// Parse parses and validates one pipeline file whose text is data. file
// names it in positions and gives the default pipeline name (its base name
// without extension). On any problem it returns a nil Pipeline and an
// ErrorList holding every problem found.
func Parse(file string, data []byte, opts Options) (*Pipeline, error) {
	f, errs := parse(file, data, opts)
	errs = append(errs, crossCheck(nonNil(f))...)
	if len(errs) > 0 {
		return nil, errs.sorted()
	}
	return f.p, nil
}

// LoadFile reads, parses and validates the pipeline file at path.
func LoadFile(path string, opts Options) (*Pipeline, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, opts)
}

// LoadDir loads every *.yaml and *.yml file directly in dir (not in
// subdirectories; names starting with "." are skipped), in name order. The
// files run together as several pipelines in one worker, so they are checked
// together: pipeline, source and sink names and consumer groups are unique
// across files, a topic is defined in one file only, a sink may read a topic
// that another file defines or produces, and all files use the same log.
// Problems of all files are returned at once, as one ErrorList.
func LoadDir(dir string, opts Options) ([]*Pipeline, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load pipelines: %w", err)
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		ext := strings.ToLower(filepath.Ext(name))
		if e.IsDir() || strings.HasPrefix(name, ".") || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, ErrorList{{Pos: Pos{File: dir}, Message: "no pipeline files (*.yaml, *.yml) in directory"}}
	}
	var (
		files []*file
		errs  ErrorList
	)
	for _, name := range names {
		path := filepath.Join(dir, name)
		data, err := readFile(path)
		if err != nil {
			return nil, err
		}
		f, ferrs := parse(path, data, opts)
		errs = append(errs, ferrs...)
		files = append(files, nonNil(f)...)
	}
	errs = append(errs, crossCheck(files)...)
	if len(errs) > 0 {
		return nil, errs.sorted()
	}
	out := make([]*Pipeline, len(files))
	for i, f := range files {
		out[i] = f.p
	}
	return out, nil
}

func readFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("load pipeline: %w", err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("load pipeline %s: is a directory", path)
	}
	if fi.Size() > maxFileSize {
		return nil, ErrorList{{Pos: Pos{File: path}, Message: fmt.Sprintf("file is %d bytes; a pipeline file may have at most %d", fi.Size(), maxFileSize)}}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load pipeline: %w", err)
	}
	return data, nil
}

// parse decodes one file. The returned file is nil when the file is not a
// pipeline at all (a syntax error, an unknown version); it is returned with
// whatever could be decoded otherwise, for the cross checks.
func parse(name string, data []byte, opts Options) (*file, ErrorList) {
	root, errs := parseYAML(name, data)
	if root == nil {
		return nil, errs
	}
	data = normalizeBreaks(data)
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	d := &fileDecoder{
		decoder: decoder{file: name, lines: strings.Split(string(data), "\n"), lookup: lookup, errs: errs},
		catalog: opts.Catalog,
	}
	base := filepath.Base(name)
	d.pipeline(root, strings.TrimSuffix(base, filepath.Ext(base)))
	return d.f, d.errs
}

func nonNil(f *file) []*file {
	if f == nil {
		return nil
	}
	return []*file{f}
}
