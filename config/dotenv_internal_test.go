package config

import (
	"maps"
	"strings"
	"testing"
)

func TestParseDotEnv(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
		err  string
	}{
		{"empty", "", map[string]string{}, ""},
		{"plain", "A=1\nB=two words\n", map[string]string{"A": "1", "B": "two words"}, ""},
		{"comments and blanks", "# c\n\n  # indented\nA=1 # trailing\nB=x#not-a-comment\n", map[string]string{"A": "1", "B": "x#not-a-comment"}, ""},
		{"export", "export A=1\nexport\tB=2\nexported=3\n", map[string]string{"A": "1", "B": "2", "exported": "3"}, ""},
		{"spaces around =", "A = 1\n B=  2  \n", map[string]string{"A": "1", "B": "2"}, ""},
		{"single quotes", `A='x "y" \n $Z # no comment'` + "\n", map[string]string{"A": `x "y" \n $Z # no comment`}, ""},
		{"double quotes", `A="line1\nline2\t\"q\" \\ \$HOME"  # c` + "\n", map[string]string{"A": "line1\nline2\t\"q\" \\ $HOME"}, ""},
		{"empty values", "A=\nB=''\nC=\"\"\n", map[string]string{"A": "", "B": "", "C": ""}, ""},
		{"equals in value", "URL=https://x/?a=b&c=d\n", map[string]string{"URL": "https://x/?a=b&c=d"}, ""},
		{"crlf and bom", "\uFEFFA=1\r\nB='2'\r\n", map[string]string{"A": "1", "B": "2"}, ""},
		{"last wins", "A=1\nA=2\n", map[string]string{"A": "2"}, ""},
		{"no equals", "A=1\nJUSTAKEY\n", nil, ".env:2: expected KEY=VALUE"},
		{"bad name", "1A=x\nA-B=y\n", nil, ".env:1: invalid variable name \"1A\"\n.env:2: invalid variable name \"A-B\""},
		{"unterminated", "A='x\nB=\"y\n", nil, ".env:1: A: unterminated single quote\n.env:2: B: unterminated double quote"},
		{"text after quote", "A='x' y\n", nil, ".env:1: A: unexpected text after the closing quote"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDotEnv(".env", []byte(tc.in))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("parseDotEnv(%q) error = %v, want %s", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Errorf("parseDotEnv(%q) = %v, %v, want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

// FuzzParseDotEnv feeds arbitrary bytes to the .env parser: it never
// panics, every variable it returns has a valid name, and every error
// names the file.
func FuzzParseDotEnv(f *testing.F) {
	f.Add([]byte("A=1\nexport B='x y'\nC=\"a\\nb\" # c\n"))
	f.Add([]byte("\uFEFFA=1\r\n# c\n\nB=\n"))
	f.Add([]byte("A='x\nB=\"y\n1A=z\nJUSTAKEY\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := parseDotEnv(".env", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), ".env:") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for k := range env {
			if !validEnvName(k) {
				t.Fatalf("parseDotEnv(%q) returned the invalid name %q", data, k)
			}
		}
	})
}
