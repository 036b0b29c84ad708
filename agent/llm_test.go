package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncaged/uwf/agent"
)

const testKey = "sk-test-0123456789-secret"

// chatBody is the request body the fake server decodes.
type chatBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	MaxTokens      int      `json:"max_tokens"`
	Temperature    *float64 `json:"temperature"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

// reply is one canned answer of the fake server.
type reply struct {
	status int
	header map[string]string
	body   string
	delay  time.Duration // block this long (or until the client gives up)
}

// fakeAPI is an OpenAI-compatible endpoint that checks every request it
// receives and answers the canned replies in turn (the last one repeats).
type fakeAPI struct {
	t       *testing.T
	replies []reply
	calls   atomic.Int32
	check   func(t *testing.T, body chatBody)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := f.t
	n := int(f.calls.Add(1))
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		t.Errorf("request %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the bearer key", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	data, _ := io.ReadAll(r.Body)
	var body chatBody
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Errorf("request body %s: %v", data, err)
	}
	if body.Model != "test-model" {
		t.Errorf("model = %q, want test-model", body.Model)
	}
	if f.check != nil {
		f.check(t, body)
	}
	rep := f.replies[min(n, len(f.replies))-1]
	if rep.delay > 0 {
		select {
		case <-r.Context().Done():
		case <-time.After(rep.delay):
		}
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rep.status)
	_, _ = io.WriteString(w, rep.body)
}

// answer is a chat completion whose first choice says content.
func answer(content string) reply {
	b, _ := json.Marshal(map[string]any{
		"id": "x", "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
	})
	return reply{status: 200, body: string(b)}
}

func newLLM(t *testing.T, f *fakeAPI, cfg agent.LLMConfig) *agent.LLM {
	t.Helper()
	f.t = t
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg.BaseURL = srv.URL + "/v1/"
	cfg.APIKey = testKey
	cfg.Model = "test-model"
	cfg.HTTPClient = srv.Client()
	if cfg.Backoff == 0 {
		cfg.Backoff = time.Millisecond
	}
	return agent.NewLLM(cfg)
}

func TestLLMRun(t *testing.T) {
	t.Parallel()
	temp := 0.25
	f := &fakeAPI{replies: []reply{answer("---\nstatus: done\nsummary: ok\n---\nDone.\n")}}
	f.check = func(t *testing.T, body chatBody) {
		if len(body.Messages) != 1 || body.Messages[0].Role != "user" || body.Messages[0].Content != "Implement the plan.\n" {
			t.Errorf("messages = %+v, want one user message holding the prompt", body.Messages)
		}
		if body.ResponseFormat != nil {
			t.Errorf("response_format = %+v, want none for a plain run", body.ResponseFormat)
		}
		if body.MaxTokens != 1000 || body.Temperature == nil || *body.Temperature != 0.25 {
			t.Errorf("max_tokens = %d, temperature = %v", body.MaxTokens, body.Temperature)
		}
	}
	l := newLLM(t, f, agent.LLMConfig{MaxTokens: 1000, Temperature: &temp})
	if l.Name() != "llm" {
		t.Errorf("Name() = %q, want llm", l.Name())
	}
	res, err := l.Run(t.Context(), request())
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if res.Raw != "---\nstatus: done\nsummary: ok\n---\nDone.\n" || res.ExitCode != 0 || res.Stderr != "" {
		t.Errorf("Run() = %+v", res)
	}
}

func TestLLMExtractJSON(t *testing.T) {
	t.Parallel()
	schema := map[string]any{
		"type":       "object",
		"properties": map[string]any{"status": map[string]any{"const": "done"}, "summary": map[string]any{"type": "string"}},
		"required":   []any{"status", "summary"},
	}
	raw := "I implemented it; status done. Summary: fixed the parser."
	f := &fakeAPI{replies: []reply{answer(" {\"status\":\"done\",\"summary\":\"fixed the parser\"}\n")}}
	f.check = func(t *testing.T, body chatBody) {
		if body.ResponseFormat == nil || body.ResponseFormat.Type != "json_object" {
			t.Errorf("response_format = %+v, want json_object", body.ResponseFormat)
		}
		if len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[1].Role != "user" {
			t.Fatalf("messages = %+v, want system then user", body.Messages)
		}
		sys := body.Messages[0].Content
		for _, want := range []string{"JSON Schema", `"const": "done"`, `"required": [`, `"summary"`} {
			if !strings.Contains(sys, want) {
				t.Errorf("system message lacks %q:\n%s", want, sys)
			}
		}
		if body.Messages[1].Content != raw {
			t.Errorf("user message = %q, want the raw output", body.Messages[1].Content)
		}
	}
	got, err := newLLM(t, f, agent.LLMConfig{}).ExtractJSON(t.Context(), schema, raw)
	if err != nil {
		t.Fatalf("ExtractJSON() error = %v", err)
	}
	if got != `{"status":"done","summary":"fixed the parser"}` {
		t.Errorf("ExtractJSON() = %q", got)
	}
}

func TestLLMErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		replies   []reply
		cfg       agent.LLMConfig
		cancel    time.Duration
		wantCalls int32
		wantCode  int
		wantIn    []string // substrings of the error
		wantIs    error
		wantRaw   string // for a success after retries
		wantLog   string // substring of Result.Stderr after retries
		wantMin   time.Duration
	}{
		{
			name:      "429 then 200 is retried, honouring Retry-After",
			replies:   []reply{{status: 429, header: map[string]string{"Retry-After": "0"}, body: `{"error":{"message":"slow down"}}`}, answer("fine")},
			wantCalls: 2, wantRaw: "fine", wantLog: "attempt 1: HTTP 429 Too Many Requests: slow down; retrying in 0s",
		},
		{
			name:      "Retry-After in seconds is waited for",
			replies:   []reply{{status: 503, header: map[string]string{"Retry-After": "1"}}, answer("later")},
			wantCalls: 2, wantRaw: "later", wantLog: "attempt 1: HTTP 503 Service Unavailable; retrying in 1s", wantMin: time.Second,
		},
		{
			name:      "5xx is retried until the attempts run out",
			replies:   []reply{{status: 503, body: "upstream overloaded"}},
			wantCalls: 3, wantCode: 1, wantIn: []string{"HTTP 503 Service Unavailable: upstream overloaded (after 3 attempts)"},
		},
		{
			name:      "401 is not retried and the key stays out of the error",
			replies:   []reply{{status: 401, body: `{"error":{"message":"Incorrect API key provided: ` + testKey + `"}}`}},
			wantCalls: 1, wantCode: 1, wantIn: []string{"HTTP 401 Unauthorized: Incorrect API key provided: [redacted]"},
		},
		{
			name:      "400 is not retried",
			replies:   []reply{{status: 400, body: "<html>bad request</html>"}},
			wantCalls: 1, wantCode: 1, wantIn: []string{"HTTP 400 Bad Request: <html>bad request</html>"},
		},
		{
			name:      "a Retry-After too long ends the call",
			replies:   []reply{{status: 429, header: map[string]string{"Retry-After": "120"}}},
			wantCalls: 1, wantCode: 1, wantIn: []string{"HTTP 429 Too Many Requests (the server asks to retry after 2m)"},
		},
		{
			name:      "malformed JSON",
			replies:   []reply{{status: 200, body: `{"choices": [`}},
			wantCalls: 1, wantCode: 1, wantIn: []string{"malformed response: ", `{"choices": [`},
		},
		{
			name:      "no choices",
			replies:   []reply{{status: 200, body: `{"choices": []}`}},
			wantCalls: 1, wantCode: 1, wantIn: []string{"no choices in the response"},
		},
		{
			name:      "empty content",
			replies:   []reply{{status: 200, body: `{"choices": [{"message": {"content": null}, "finish_reason": "content_filter"}]}`}},
			wantCalls: 1, wantCode: 1, wantIn: []string{"empty answer (finish_reason content_filter)"},
		},
		{
			name:      "an error in a 200 answer",
			replies:   []reply{{status: 200, body: `{"error": {"message": "model overloaded"}}`}},
			wantCalls: 1, wantCode: 1, wantIn: []string{"the API answered an error: model overloaded"},
		},
		{
			name:      "timeout",
			replies:   []reply{{status: 200, delay: 10 * time.Second}},
			cfg:       agent.LLMConfig{Timeout: 200 * time.Millisecond},
			wantCalls: 1, wantCode: 124, wantIn: []string{"timed out after 200ms"}, wantIs: context.DeadlineExceeded,
		},
		{
			name:      "interrupted",
			replies:   []reply{{status: 200, delay: 10 * time.Second}},
			cancel:    200 * time.Millisecond,
			wantCalls: 1, wantCode: 130, wantIn: []string{"interrupted"}, wantIs: context.Canceled,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeAPI{replies: tc.replies}
			l := newLLM(t, f, tc.cfg)
			ctx := t.Context()
			if tc.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(tc.cancel, cancel)
			}
			res, err := l.Run(ctx, request())
			if got := f.calls.Load(); got != tc.wantCalls {
				t.Errorf("the server got %d requests, want %d", got, tc.wantCalls)
			}
			if tc.wantRaw != "" {
				if err != nil {
					t.Fatalf("Run() error = %v", err)
				}
				if res.Duration < tc.wantMin {
					t.Errorf("Duration = %v, want at least %v", res.Duration, tc.wantMin)
				}
				if res.Raw != tc.wantRaw || !strings.Contains(res.Stderr, tc.wantLog) {
					t.Errorf("Run() = %+v, want Raw %q and Stderr containing %q", res, tc.wantRaw, tc.wantLog)
				}
				return
			}
			re := runErr(t, err)
			if re.Result.ExitCode != tc.wantCode {
				t.Errorf("exit code = %d, want %d (%v)", re.Result.ExitCode, tc.wantCode, err)
			}
			for _, want := range tc.wantIn {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(re.Result.Stderr, testKey) {
				t.Errorf("the API key leaked: %q", err)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.wantIs)
			}
		})
	}
}

func TestLLMConnectionRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	l := agent.NewLLM(agent.LLMConfig{BaseURL: url, APIKey: testKey, Model: "m", Attempts: 2, Backoff: time.Millisecond})
	_, err := l.Run(t.Context(), request())
	re := runErr(t, err)
	if !strings.Contains(re.Reason, "request failed: ") || !strings.Contains(re.Reason, "(after 2 attempts)") {
		t.Errorf("Reason = %q", re.Reason)
	}
	if !strings.Contains(re.Result.Stderr, "attempt 1: request failed") {
		t.Errorf("Stderr = %q, want the retry noted", re.Result.Stderr)
	}
}
