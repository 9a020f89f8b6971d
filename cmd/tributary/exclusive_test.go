package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Two file sinks appending to one file pass no validation: the second is
// reported where its path is written (it would restart-loop at run time).
func TestValidate_TwoFileSinksOnOnePath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	src := `version: 1
name: p
topics: [{name: t}]
sinks:
  - name: a
    connector: file
    topics: [t]
    config: {path: ./out.jsonl}
  - name: b
    connector: file
    topics: [t]
    config: {path: out.jsonl}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	err := mustFail(t, dir, "", "validate", file)
	wantContains(t, "validate", err.Error(), file+`:12:20: sinks[1].config.path: file path "out.jsonl" is already used by a at 8:20`)
}
