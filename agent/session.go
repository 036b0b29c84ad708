package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/uncaged/uwf/config"
)

// Session is what a coding agent reported about its run in its structured
// output: the tool's session id, the model, token counts and cost. A
// zero field was not reported (or was zero). Package thread records it in
// the step's detail (the detail-run kind).
type Session struct {
	Tool             string  // the output format that read it: "claude-code", "codex", ...
	ID               string  // the tool's session (or thread) id, to resume it
	Model            string  // the model that answered (the one that cost most, when several did)
	InputTokens      int64   // prompt tokens, cached ones included
	OutputTokens     int64   // answer tokens
	CacheReadTokens  int64   // prompt tokens read from the provider's cache
	CacheWriteTokens int64   // prompt tokens written to it
	ReasoningTokens  int64   // thinking tokens, where reported apart
	CostUSD          float64 // what the tool says the run cost, in US dollars
	Turns            int64   // the agent's turns (model calls), where reported
}

// orNil returns s, or nil when it holds nothing but the tool's name: a
// run that reported nothing of its session records none.
// Counts are bounded to 2^53 and the cost to a finite amount, as a
// detail-run node holds them.
func (s *Session) orNil() *Session {
	if s == nil || *s == (Session{Tool: s.Tool}) {
		return nil
	}
	for _, n := range []*int64{&s.InputTokens, &s.OutputTokens, &s.CacheReadTokens, &s.CacheWriteTokens, &s.ReasoningTokens, &s.Turns} {
		*n = min(max(*n, 0), 1<<53)
	}
	if !(s.CostUSD >= 0) || s.CostUSD > math.MaxFloat64 {
		s.CostUSD = 0
	}
	return s
}

// ErrRateLimited is wrapped by the [RunError] of a run that the tool says
// was refused for a rate or usage limit (an HTTP 429, a quota, a usage
// limit): retrying later may succeed.
var ErrRateLimited = errors.New("agent: rate limited")

// outputReport is what an output reader made of a run's stdout.
type outputReport struct {
	answer  string   // the final answer: the raw output
	session *Session // nil when the tool reported none
	// failure is the error the tool reported in its output ("" if none):
	// the run failed even if it exited 0.
	failure string
	// rateLimited says the failure is a rate or usage limit.
	rateLimited bool
}

// outputReader reads a run's stdout (and stderr, where the tool writes its
// error object there). The error says the output is not the format's at
// all.
type outputReader func(stdout, stderr string) (*outputReport, error)

// outputReaders holds a reader for every structured output format of
// package config; text has none.
var outputReaders = map[string]outputReader{
	config.OutputClaudeCode: func(stdout, _ string) (*outputReport, error) { return readResultObject("claude-code", stdout) },
	config.OutputCursor:     func(stdout, _ string) (*outputReport, error) { return readResultObject("cursor", stdout) },
	config.OutputCodex:      readCodex,
	config.OutputGemini:     readGemini,
	config.OutputOpenCode:   readOpenCode,
	config.OutputAider:      readAider,
}

// firstObject decodes the first JSON object in s, skipping anything
// before its opening brace (a warning a tool printed first).
func firstObject(s string, v any) error {
	i := strings.IndexByte(s, '{')
	if i < 0 {
		return errors.New("no JSON object in it")
	}
	dec := json.NewDecoder(strings.NewReader(s[i:]))
	dec.UseNumber()
	return dec.Decode(v)
}

// count reads a JSON number as a non-negative integer (0 for anything else).
func count(n json.Number) int64 {
	f, err := n.Float64()
	if err != nil || f < 0 || f > 1<<53 || math.IsNaN(f) {
		return 0
	}
	return int64(f)
}

// money reads a JSON number as a non-negative amount (0 for anything else).
func money(n json.Number) float64 {
	f, err := n.Float64()
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0
	}
	return f
}

// rateLimitText matches the words tools use for a rate or usage limit.
var rateLimitText = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)rate.?limit|\b429\b|too many requests|quota|resource.?exhausted|usage limit|overloaded`)
})

func isRateLimit(msg string) bool { return rateLimitText().MatchString(msg) }

// readResultObject reads the one result object that `claude -p
// --output-format json` and Cursor's `agent -p --output-format json`
// print: {type: "result", subtype, is_error, result, session_id, ...}.
func readResultObject(tool, stdout string) (*outputReport, error) {
	var o struct {
		Type           string          `json:"type"`
		Subtype        string          `json:"subtype"`
		IsError        bool            `json:"is_error"`
		Result         *string         `json:"result"`
		SessionID      string          `json:"session_id"`
		TotalCostUSD   json.Number     `json:"total_cost_usd"`
		NumTurns       json.Number     `json:"num_turns"`
		APIErrorStatus json.RawMessage `json:"api_error_status"`
		Errors         []string        `json:"errors"`
		Usage          struct {
			Input      json.Number `json:"input_tokens"`
			Output     json.Number `json:"output_tokens"`
			CacheWrite json.Number `json:"cache_creation_input_tokens"`
			CacheRead  json.Number `json:"cache_read_input_tokens"`
		} `json:"usage"`
		ModelUsage map[string]struct {
			CostUSD json.Number `json:"costUSD"`
			Output  json.Number `json:"outputTokens"`
		} `json:"modelUsage"`
	}
	if err := firstObject(stdout, &o); err != nil {
		return nil, err
	}
	if o.Type != "result" {
		return nil, fmt.Errorf("its type is %q, not \"result\"", o.Type)
	}
	s := &Session{Tool: tool, ID: o.SessionID, CostUSD: money(o.TotalCostUSD), Turns: count(o.NumTurns),
		CacheReadTokens: count(o.Usage.CacheRead), CacheWriteTokens: count(o.Usage.CacheWrite), OutputTokens: count(o.Usage.Output)}
	s.InputTokens = count(o.Usage.Input) + s.CacheReadTokens + s.CacheWriteTokens
	best := -1.0
	for _, m := range sortedKeys(o.ModelUsage) {
		if c := money(o.ModelUsage[m].CostUSD) + float64(count(o.ModelUsage[m].Output))*1e-12; c > best {
			s.Model, best = m, c
		}
	}
	r := &outputReport{session: s}
	if o.Result != nil {
		r.answer = *o.Result
	}
	if o.IsError || o.Subtype != "" && o.Subtype != "success" {
		msg := strings.TrimSpace(r.answer)
		if len(o.Errors) > 0 {
			msg = strings.Join(o.Errors, "; ")
		}
		if msg == "" {
			msg = o.Subtype
		}
		r.failure = msg
		r.rateLimited = string(o.APIErrorStatus) == "429" || isRateLimit(msg)
	} else if o.Result == nil {
		return nil, errors.New("it has no result")
	}
	return r, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// eachJSONLine calls f with every line of s that holds a JSON object; other
// lines (a tool's stray output) are skipped. It reports whether any did.
func eachJSONLine(s string, f func(line []byte)) bool {
	found := false
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "{") || !json.Valid([]byte(line)) {
			continue
		}
		found = true
		f([]byte(line))
	}
	return found
}

// readCodex reads the JSONL events of `codex exec --json`: thread.started
// (thread_id), item.completed with an agent_message item (text: the
// answer, the last one wins), turn.completed (usage), turn.failed and
// error (a message).
func readCodex(stdout, _ string) (*outputReport, error) {
	s := &Session{Tool: "codex"}
	r := &outputReport{session: s}
	var errs []string
	answered := false
	ok := eachJSONLine(stdout, func(line []byte) {
		var e struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
			Message  string `json:"message"`
			Item     struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"item"`
			Usage struct {
				Input  json.Number `json:"input_tokens"`
				Cached json.Number `json:"cached_input_tokens"`
				Output json.Number `json:"output_tokens"`
			} `json:"usage"`
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if dec.Decode(&e) != nil {
			return
		}
		switch e.Type {
		case "thread.started":
			s.ID = e.ThreadID
		case "item.completed":
			if e.Item.Type == "agent_message" {
				r.answer, answered = e.Item.Text, true
			}
		case "turn.completed":
			s.Turns++
			s.InputTokens += count(e.Usage.Input)
			s.CacheReadTokens += count(e.Usage.Cached)
			s.OutputTokens += count(e.Usage.Output)
		case "turn.failed":
			errs = append(errs, e.Error.Message)
		case "error":
			errs = append(errs, e.Message)
		}
	})
	if !ok {
		return nil, errors.New("no JSON event in it")
	}
	if len(errs) > 0 {
		r.failure = strings.Join(slices.Compact(errs), "; ")
		r.rateLimited = isRateLimit(r.failure)
	} else if !answered {
		r.failure = "codex gave no answer (no agent_message item)"
	}
	return r, nil
}

// readGemini reads the object of `gemini --output-format json`:
// {session_id, response, stats: {models: {<model>: {tokens}}}, error}. On
// a failure gemini writes the object with the error to stderr instead.
func readGemini(stdout, stderr string) (*outputReport, error) {
	var o struct {
		SessionID string  `json:"session_id"`
		Response  *string `json:"response"`
		Stats     struct {
			Models map[string]struct {
				Tokens struct {
					Prompt     json.Number `json:"prompt"`
					Candidates json.Number `json:"candidates"`
					Total      json.Number `json:"total"`
					Cached     json.Number `json:"cached"`
					Thoughts   json.Number `json:"thoughts"`
				} `json:"tokens"`
			} `json:"models"`
		} `json:"stats"`
		Error *struct {
			Type    string          `json:"type"`
			Message string          `json:"message"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	err := firstObject(stdout, &o)
	if err != nil || o.Response == nil && o.Error == nil {
		if errStderr := firstObject(stderr, &o); errStderr != nil || o.Error == nil {
			if err == nil {
				err = errors.New("it has neither a response nor an error")
			}
			return nil, err
		}
	}
	s := &Session{Tool: "gemini", ID: o.SessionID}
	var most int64 = -1
	for _, m := range sortedKeys(o.Stats.Models) {
		t := o.Stats.Models[m].Tokens
		s.InputTokens += count(t.Prompt)
		s.OutputTokens += count(t.Candidates)
		s.CacheReadTokens += count(t.Cached)
		s.ReasoningTokens += count(t.Thoughts)
		if n := count(t.Total); n > most {
			s.Model, most = m, n
		}
	}
	r := &outputReport{session: s}
	if o.Response != nil {
		r.answer = *o.Response
	}
	if o.Error != nil {
		r.failure = strings.TrimSpace(o.Error.Message)
		if r.failure == "" {
			r.failure = o.Error.Type
		}
		r.rateLimited = string(o.Error.Code) == "429" || isRateLimit(r.failure+" "+o.Error.Type)
	}
	return r, nil
}

// readOpenCode reads the JSONL events of `opencode run --format json`:
// {type, sessionID, part} with text parts (the answer: those of the last
// step), step_finish parts (tokens, cost) and error events.
func readOpenCode(stdout, _ string) (*outputReport, error) {
	s := &Session{Tool: "opencode"}
	r := &outputReport{session: s}
	var texts, errs []string
	ok := eachJSONLine(stdout, func(line []byte) {
		var e struct {
			Type      string `json:"type"`
			SessionID string `json:"sessionID"`
			Part      struct {
				Text   string      `json:"text"`
				Cost   json.Number `json:"cost"`
				Tokens struct {
					Input     json.Number `json:"input"`
					Output    json.Number `json:"output"`
					Reasoning json.Number `json:"reasoning"`
					Cache     struct {
						Read  json.Number `json:"read"`
						Write json.Number `json:"write"`
					} `json:"cache"`
				} `json:"tokens"`
			} `json:"part"`
			Error struct {
				Name string `json:"name"`
				Data struct {
					Message string `json:"message"`
				} `json:"data"`
			} `json:"error"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if dec.Decode(&e) != nil {
			return
		}
		if e.SessionID != "" {
			s.ID = e.SessionID
		}
		switch e.Type {
		case "step_start":
			texts = texts[:0]
		case "text":
			texts = append(texts, e.Part.Text)
		case "step_finish":
			s.Turns++
			t := e.Part.Tokens
			s.CacheReadTokens += count(t.Cache.Read)
			s.CacheWriteTokens += count(t.Cache.Write)
			s.InputTokens += count(t.Input) + count(t.Cache.Read) + count(t.Cache.Write)
			s.OutputTokens += count(t.Output)
			s.ReasoningTokens += count(t.Reasoning)
			s.CostUSD += money(e.Part.Cost)
		case "error":
			msg := e.Error.Data.Message
			if msg == "" {
				msg = e.Error.Name
			}
			errs = append(errs, msg)
		}
	})
	if !ok {
		return nil, errors.New("no JSON event in it")
	}
	r.answer = strings.Join(texts, "\n")
	if len(errs) > 0 {
		r.failure = strings.Join(errs, "; ")
		r.rateLimited = isRateLimit(r.failure)
	} else if len(texts) == 0 {
		r.failure = "opencode gave no answer (no text part)"
	}
	return r, nil
}

// aiderUsage matches aider's usage report: "Tokens: 2.3k sent, 1.1k cache
// hit, 150 received. Cost: $0.01 message, $0.02 session."
var aiderUsage = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^Tokens: ([0-9.]+k?) sent(?:, ([0-9.]+k?) cache write)?(?:, ([0-9.]+k?) cache hit)?, ([0-9.]+k?) received\.(?: Cost: \$([0-9.]+) message)?`)
})

// aiderModel matches aider's banner line naming its main model.
var aiderModel = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:Main model|Model): (\S+)`)
})

// readAider reads aider's text output: the answer begins at its first
// "---" line (aider prints a banner before it) and ends before the usage
// report, which gives the token counts and cost; the banner names the
// model. Output without a "---" line is the answer whole.
func readAider(stdout, _ string) (*outputReport, error) {
	s := &Session{Tool: "aider"}
	lines := strings.Split(strings.ReplaceAll(stdout, "\r\n", "\n"), "\n")
	start, end := -1, len(lines)
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if m := aiderModel().FindStringSubmatch(t); m != nil && start < 0 && s.Model == "" {
			s.Model = m[1]
		}
		if t == "---" && start < 0 {
			start = i
		}
		if m := aiderUsage().FindStringSubmatch(t); m != nil {
			s.InputTokens += aiderTokens(m[1])
			s.CacheWriteTokens += aiderTokens(m[2])
			s.CacheReadTokens += aiderTokens(m[3])
			s.OutputTokens += aiderTokens(m[4])
			if c, err := strconv.ParseFloat(m[5], 64); err == nil && c >= 0 {
				s.CostUSD += c
			}
			s.Turns++
			if i >= start && start >= 0 && i < end {
				end = i
			}
		}
	}
	if start < 0 {
		start = 0
	}
	if end < start {
		end = len(lines)
	}
	return &outputReport{answer: strings.Join(lines[start:end], "\n"), session: s}, nil
}

// aiderTokens reads aider's rounded token counts: "950", "2.3k", "12k".
func aiderTokens(s string) int64 {
	mult := 1.0
	if t, ok := strings.CutSuffix(s, "k"); ok {
		s, mult = t, 1000
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1<<40 {
		return 0
	}
	return int64(math.Round(f * mult))
}
