package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/config"
)

// Defaults of an [LLMConfig].
const (
	// DefaultLLMTimeout bounds one LLM call, retries included, when the
	// config sets none.
	DefaultLLMTimeout = 10 * time.Minute
	// DefaultLLMAttempts is how many times a call is tried when the server
	// answers 429 or 5xx or the connection fails, when the config sets none.
	DefaultLLMAttempts = 3
	// DefaultLLMBackoff is the first wait between attempts (doubled each
	// time), when the config sets none and the server sends no Retry-After.
	DefaultLLMBackoff = time.Second
	// MaxRetryAfter is the longest Retry-After an LLM waits; a server asking
	// for more ends the call.
	MaxRetryAfter = time.Minute
	// maxResponse bounds a response body.
	maxResponse = 16 << 20
)

// LLMConfig configures an [LLM]: a provider and a model of config.yaml.
type LLMConfig struct {
	Name        string        // the agent's name; "" means "llm"
	BaseURL     string        // the API root, such as "https://api.openai.com/v1"; the client posts to BaseURL + "/chat/completions"
	APIKey      string        // sent as "Authorization: Bearer <key>"; "" sends no Authorization header. Never appears in errors.
	Model       string        // the model's name, sent as "model"
	Timeout     time.Duration // bounds one call, retries included; 0 means [DefaultLLMTimeout]
	HTTPClient  *http.Client  // nil means a client of its own (without a timeout: Timeout bounds the call)
	MaxTokens   int           // sent as "max_tokens" when positive
	Temperature *float64      // sent as "temperature" when not nil
	Attempts    int           // tries on 429, 5xx and connection failures; 0 means [DefaultLLMAttempts]
	Backoff     time.Duration // first wait between tries, doubled each time; 0 means [DefaultLLMBackoff]
}

// LLM is an agent that asks an OpenAI-compatible chat completions endpoint:
// the assembled prompt as the user message, the answer's content as the raw
// output. It retries, with backoff, when the server answers 429 or 5xx or
// the connection fails, honouring Retry-After; any other error status ends
// the call. Retries are noted in the Result's Stderr. An LLM is safe for
// concurrent use.
//
// It also satisfies extract's JSONExtractor with [LLM.ExtractJSON].
type LLM struct {
	cfg    LLMConfig
	client *http.Client
}

var _ Agent = (*LLM)(nil)

// NewLLM returns an LLM agent for cfg.
func NewLLM(cfg LLMConfig) *LLM {
	if cfg.Name == "" {
		cfg.Name = "llm"
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultLLMTimeout
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultLLMAttempts
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultLLMBackoff
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	return &LLM{cfg: cfg, client: client}
}

// Name returns the configured name, "llm" by default.
func (l *LLM) Name() string { return l.cfg.Name }

// message is one chat message.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatRequest is the body of POST /chat/completions.
type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []message       `json:"messages"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

type responseFormat struct {
	Type string `json:"type"`
}

// chatResponse is the part of the answer the client reads.
type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Error *apiError `json:"error"`
}

type apiError struct {
	Message string `json:"message"`
}

// Run sends req.Prompt as one user message and returns the answer. Errors
// are *[RunError]s: an HTTP error status (with an excerpt of the body), a
// malformed answer, no choices, an empty answer (ExitCode [ExitFailure]); a
// timeout ([ExitTimeout], wrapping [context.DeadlineExceeded]); an
// interruption ([ExitInterrupted], wrapping [context.Canceled]).
func (l *LLM) Run(ctx context.Context, req *Request) (*Result, error) {
	return l.chat(ctx, chatRequest{Messages: []message{{Role: "user", Content: req.Prompt}}})
}

// ExtractJSON asks the model, in JSON mode ("response_format": {"type":
// "json_object"}), for one JSON object valid against schema (a JSON Schema
// as plain JSON values, written into the system message) holding what raw
// says, and returns the JSON text as the model wrote it. The caller parses
// and validates it. Errors are as for [LLM.Run].
func (l *LLM) ExtractJSON(ctx context.Context, schema any, raw string) (string, error) {
	text, err := schemaText(schema)
	if err != nil {
		return "", &RunError{Agent: l.cfg.Name, Reason: "schema: " + err.Error(), Result: &Result{ExitCode: ExitFailure}, Err: err}
	}
	res, err := l.chat(ctx, chatRequest{
		Messages: []message{
			{Role: "system", Content: extractInstruction + text},
			{Role: "user", Content: raw},
		},
		ResponseFormat: &responseFormat{Type: "json_object"},
	})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(res.Raw), nil
}

// extractInstruction opens ExtractJSON's system message; the schema follows.
const extractInstruction = `You turn an AI agent's answer into structured data. The user message is the agent's whole answer.
Reply with exactly one JSON object, and nothing else, that is valid against the JSON Schema below.
Take every value from the answer (its status, its fields, its text); do not invent what the answer does not say.

JSON Schema:
`

// schemaText renders a schema as indented JSON with sorted keys.
func schemaText(schema any) (string, error) {
	b, err := cas.Canonical(schema)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return "", err
	}
	return out.String(), nil
}

// chat posts body (model and options filled in here), retrying as
// documented on [LLM].
func (l *LLM) chat(ctx context.Context, body chatRequest) (*Result, error) {
	start := time.Now()
	res := &Result{}
	fail := func(code int, reason string, err error) (*Result, error) {
		res.ExitCode = code
		res.Duration = time.Since(start)
		if err != nil {
			err = redactedError{err: err, secret: l.cfg.APIKey}
		}
		return nil, &RunError{Agent: l.cfg.Name, Reason: l.redact(reason), Result: res, Err: err}
	}

	body.Model = l.cfg.Model
	body.MaxTokens = l.cfg.MaxTokens
	body.Temperature = l.cfg.Temperature
	payload, err := json.Marshal(body)
	if err != nil {
		return fail(ExitFailure, "encode request: "+err.Error(), err)
	}

	callCtx, cancel := context.WithTimeoutCause(ctx, l.cfg.Timeout, errTimeout)
	defer cancel()
	stopped := func() (*Result, error) {
		if errors.Is(context.Cause(callCtx), errTimeout) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fail(ExitTimeout, "timed out after "+config.FormatDuration(l.cfg.Timeout), context.DeadlineExceeded)
		}
		return fail(ExitInterrupted, "interrupted", context.Canceled)
	}

	var stderr strings.Builder
	defer func() { res.Stderr = l.redact(stderr.String()) }()
	backoff := l.cfg.Backoff
	for attempt := 1; ; attempt++ {
		status, respBody, header, err := l.post(callCtx, payload)
		if callCtx.Err() != nil {
			return stopped()
		}
		var reason string
		var wait time.Duration
		waitSet := false
		switch {
		case err != nil:
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fail(ExitTimeout, "request timed out: "+err.Error(), errors.Join(context.DeadlineExceeded, err))
			}
			reason = "request failed: " + err.Error()
		case status == http.StatusTooManyRequests || status >= 500:
			reason = httpReason(status, respBody)
			if ra, ok := retryAfter(header.Get("Retry-After"), time.Now()); ok {
				if ra > MaxRetryAfter {
					return fail(ExitFailure, fmt.Sprintf("%s (the server asks to retry after %s)", reason, config.FormatDuration(ra)), nil)
				}
				wait, waitSet = ra, true
			}
		case status < 200 || status > 299:
			return fail(ExitFailure, httpReason(status, respBody), nil)
		default:
			raw, reason, err := parseAnswer(respBody)
			if err != nil || reason != "" {
				return fail(ExitFailure, reason, err)
			}
			res.Raw = raw
			res.Duration = time.Since(start)
			return res, nil
		}
		if attempt >= l.cfg.Attempts {
			if attempt > 1 {
				reason += fmt.Sprintf(" (after %d attempts)", attempt)
			}
			return fail(ExitFailure, reason, err)
		}
		if !waitSet {
			wait = backoff
			backoff *= 2
		}
		fmt.Fprintf(&stderr, "attempt %d: %s; retrying in %s\n", attempt, reason, config.FormatDuration(wait))
		t := time.NewTimer(wait)
		select {
		case <-callCtx.Done():
			t.Stop()
			return stopped()
		case <-t.C:
		}
	}
}

// post sends one request and reads the answer (bounded).
func (l *LLM) post(ctx context.Context, payload []byte) (int, []byte, http.Header, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, l.cfg.BaseURL+"/chat/completions", bytes.NewReader(payload))
	if err != nil {
		return 0, nil, nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "uwf")
	if l.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+l.cfg.APIKey)
	}
	resp, err := l.client.Do(hreq)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("read response: %w", err)
	}
	if len(body) > maxResponse {
		return 0, nil, nil, fmt.Errorf("response exceeds %s", formatSize(maxResponse))
	}
	return resp.StatusCode, body, resp.Header, nil
}

// parseAnswer reads choices[0].message.content; a non-empty reason says
// what is wrong with the answer.
func parseAnswer(body []byte) (string, string, error) {
	var cr chatResponse
	if err := json.Unmarshal(body, &cr); err != nil {
		return "", "malformed response: " + err.Error() + ": " + excerpt(body), err
	}
	if cr.Error != nil && cr.Error.Message != "" {
		return "", "the API answered an error: " + oneLine(cr.Error.Message, 300), nil
	}
	if len(cr.Choices) == 0 {
		return "", "no choices in the response: " + excerpt(body), nil
	}
	c := cr.Choices[0]
	if c.Message.Content == nil || *c.Message.Content == "" {
		why := "empty answer"
		if c.FinishReason != "" {
			why += " (finish_reason " + c.FinishReason + ")"
		}
		return "", why, nil
	}
	return *c.Message.Content, "", nil
}

// httpReason describes an error status with the API's message, or an
// excerpt of the body.
func httpReason(status int, body []byte) string {
	reason := "HTTP " + strconv.Itoa(status)
	if text := http.StatusText(status); text != "" {
		reason += " " + text
	}
	var cr chatResponse
	if json.Unmarshal(body, &cr) == nil && cr.Error != nil && cr.Error.Message != "" {
		return reason + ": " + oneLine(cr.Error.Message, 300)
	}
	if len(bytes.TrimSpace(body)) > 0 {
		reason += ": " + excerpt(body)
	}
	return reason
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(h); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func excerpt(body []byte) string { return oneLine(string(body), 300) }

// oneLine folds whitespace runs into single spaces and cuts s to n bytes.
func oneLine(s string, n int) string {
	return cut(strings.Join(strings.Fields(s), " "), n)
}

// redact removes the API key from text meant for errors and logs.
func (l *LLM) redact(s string) string {
	if l.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, l.cfg.APIKey, "[redacted]")
}

// redactedError hides a secret in an underlying error's message; errors.Is
// and errors.As still see the error itself.
type redactedError struct {
	err    error
	secret string
}

func (e redactedError) Error() string {
	if e.secret == "" {
		return e.err.Error()
	}
	return strings.ReplaceAll(e.err.Error(), e.secret, "[redacted]")
}

func (e redactedError) Unwrap() error { return e.err }
