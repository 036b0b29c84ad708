package cas_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// TestDraft2020 runs cases of draft 2020-12 behaviour the validator once
// got wrong (an empty enum, $dynamicRef across resources), in the shape of
// the JSON-Schema-Test-Suite, from testdata/jsonschema.
func TestDraft2020(t *testing.T) {
	data, err := os.ReadFile("testdata/jsonschema/draft2020.json")
	if err != nil {
		t.Fatal(err)
	}
	var groups []struct {
		Description string
		Schema      json.RawMessage
		Tests       []struct {
			Description string
			Data        json.RawMessage
			Valid       bool
		}
	}
	if err := json.Unmarshal(data, &groups); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		t.Run(g.Description, func(t *testing.T) {
			doc, err := cas.ParseJSON(g.Schema)
			if err != nil {
				t.Fatal(err)
			}
			s, err := cas.CompileSchema(doc)
			if err != nil {
				t.Fatalf("CompileSchema: %v", err)
			}
			for _, tc := range g.Tests {
				v, err := cas.ParseJSON(tc.Data)
				if err != nil {
					t.Fatal(err)
				}
				err = s.Validate(v)
				if got := err == nil; got != tc.Valid {
					t.Errorf("%s: Validate(%s) = %v, want valid %v", tc.Description, tc.Data, err, tc.Valid)
				}
				if err != nil && !errors.Is(err, cas.ErrInvalid) {
					t.Errorf("%s: error %v does not wrap ErrInvalid", tc.Description, err)
				}
			}
		})
	}
}

// TestEmptyEnumMessage: the violation says why, at the enum.
func TestEmptyEnumMessage(t *testing.T) {
	s, err := cas.CompileSchema(mustJSON(t, `{"properties":{"x":{"enum":[]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Validate(mustJSON(t, `{"x":1}`))
	var ve *cas.ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) != 1 {
		t.Fatalf("Validate = %v, want one violation", err)
	}
	v := ve.Violations[0]
	if v.Path != "/x" || v.SchemaPath != "/properties/x/enum" || !strings.Contains(v.Message, "enum is empty") {
		t.Errorf("violation = %+v, want at /x, schema /properties/x/enum, saying the enum is empty", v)
	}
}
