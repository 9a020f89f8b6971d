package mysql

import (
	"strings"
	"testing"
)

// FuzzParseGTIDSet feeds arbitrary GTID sets, as a stored position or a
// PATCH of the connector's offsets gives them, to parseGTIDSet in both
// flavors. It never panics; errors name the GTID; a set that parses
// prints as text that parses to a set printing the same, and the set
// operations a restart uses (clone, forSync, missing, behind) work on it.
func FuzzParseGTIDSet(f *testing.F) {
	a, b := "3e11fa47-71ca-11e1-9e33-c80aa9429562", "57b70f4e-20d3-11e5-a393-4a63946f7eac"
	for _, s := range []string{"", a + ":1-5:7,\n" + b + ":1-3", a + ":1", "not-a-uuid:1", a + ":5-1", a + ":0", a + ":1-9223372036854775807",
		"0-1-42,1-7-3", "0-1-1,0-1-2", "0-1", "4294967296-1-1", "0-1-18446744073709551615", ",", "0-1-1,,", "-1-1-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, flavor := range []string{flavorMySQL, flavorMariaDB} {
			g, err := parseGTIDSet(flavor, s)
			if err != nil {
				if !strings.Contains(err.Error(), "gtid") {
					t.Fatalf("%s %q: error %q does not name the GTID", flavor, s, err)
				}
				continue
			}
			text := g.String()
			back, err := parseGTIDSet(flavor, text)
			if err != nil {
				t.Fatalf("%s %q parses, its text %q does not: %v", flavor, s, text, err)
			}
			if back.String() != text {
				t.Fatalf("%s %q prints %q, which parses to %q", flavor, s, text, back.String())
			}
			c := g.clone()
			if c.String() != text {
				t.Fatalf("%s clone of %q prints %q", flavor, text, c.String())
			}
			if _, err := g.forSync(); err != nil {
				t.Fatalf("%s %q: forSync: %v", flavor, text, err)
			}
			_ = g.missing(back)
			_ = g.behind(back)
			_ = g.isEmpty()
		}
	})
}
