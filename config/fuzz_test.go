package config_test

import (
	"testing"

	"github.com/uncaged/uwf/config"
)

// FuzzParse feeds arbitrary bytes to the config.yaml parser: it never
// panics, and a config it accepts lists only settings it can get back.
func FuzzParse(f *testing.F) {
	f.Add([]byte("agents:\n  coder: {command: x, args: [a], timeout: 10m}\ndefaultAgent: coder\n"))
	f.Add([]byte("providers:\n  p: {baseURL: http://x, apiKeyEnv: K}\nmodels:\n  m: {provider: p, model: g}\ndefaultModel: m\n"))
	f.Add([]byte("agentOverrides: {wf: {role: synth}}\n"))
	f.Add([]byte("agents: [1, 2]\n"))
	f.Add([]byte("secrets: [DB_URL, A_B]\nagents:\n  a: {command: x, env: {DB_URL: v, GH_TOKEN: t}}\n"))
	f.Add([]byte("secrets: [1x, {a: b}]\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse("config.yaml", data, builtins{})
		if err != nil {
			return
		}
		for _, kv := range c.List() {
			if _, err := c.Get(kv.Path); err != nil {
				t.Fatalf("List names %q but Get fails: %v", kv.Path, err)
			}
		}
		for _, v := range c.Secrets() {
			if v == "" {
				t.Fatalf("Secrets() holds an empty value")
			}
		}
	})
}
