package pipelines

import "testing"

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"topic", "topics", 1},
		{"retires", "retries", 1}, // a transposition
		{"kitten", "sitting", 3},
		{"émbedded", "embedded", 1},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q): got %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"name", "connector", "topics", "topics_regex", "group", "tasks", "config", "transforms", "errors"}
	tests := []struct {
		word, want string
	}{
		{"topic", "topics"},
		{"conector", "connector"},
		{"Group", "group"},
		{"transfroms", "transforms"},
		{"error", "errors"},
		{"xyz", ""},
		{"partitions", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.word, keys); got != tt.want {
			t.Errorf("suggest(%q): got %q, want %q", tt.word, got, tt.want)
		}
	}
}
