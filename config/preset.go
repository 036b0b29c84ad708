package config

import (
	"slices"
	"strings"
)

// How an agent command is given the prompt ([Agent.Prompt]).
const (
	// PromptStdin writes the prompt to the command's stdin (the default).
	PromptStdin = "stdin"
	// PromptArg passes the prompt as the last argument. Linux bounds one
	// argument to 128 KiB: a longer prompt fails the run before it starts.
	PromptArg = "arg"
	// PromptFile writes the prompt to a file only the user can read, passes
	// its path as the last argument, and removes it when the run ends.
	PromptFile = "file"
)

// How an agent command's stdout is read ([Agent.Output]). Package agent
// holds a reader for each; every one but [OutputText] also fills in the
// run's session (id, model, token counts, cost) when the tool reports it.
const (
	// OutputText takes stdout as it is: the raw output (the default).
	OutputText = "text"
	// OutputClaudeCode reads the result object of `claude -p
	// --output-format json`.
	OutputClaudeCode = "claude-code"
	// OutputCodex reads the JSONL events of `codex exec --json`.
	OutputCodex = "codex"
	// OutputCursor reads the result object of `agent -p --output-format
	// json` (Cursor's CLI).
	OutputCursor = "cursor"
	// OutputGemini reads the object of `gemini --output-format json`.
	OutputGemini = "gemini"
	// OutputOpenCode reads the JSONL events of `opencode run --format
	// json`.
	OutputOpenCode = "opencode"
	// OutputAider reads aider's text output: the answer from its first
	// "---" line, and the token and cost report it prints last.
	OutputAider = "aider"
)

// PromptModes and OutputFormats list the values [Agent.Prompt] and
// [Agent.Output] may take.
var (
	PromptModes   = []string{PromptStdin, PromptArg, PromptFile}
	OutputFormats = []string{OutputText, OutputAider, OutputClaudeCode, OutputCodex, OutputCursor, OutputGemini, OutputOpenCode}
)

// Preset is a ready-made agent entry for a coding agent's documented
// headless mode: config.yaml's agents.<name>.preset fills in the fields
// the entry leaves unset ([Config.Agent]).
type Preset struct {
	Name    string // the preset's name, as agents.<name>.preset gives it
	Tool    string // the tool's name, for people ("Claude Code")
	Command string // the program, looked up in PATH
	// OtherCommands are other names the tool's installer gives the same
	// program (an older name kept as an alias), tried in order when
	// Command is not on PATH: uwf init then writes the name it found.
	OtherCommands []string
	// PathMarker, when set, is a string the program's resolved path
	// (symbolic links followed) must contain for uwf init to take a
	// program found as Command for this tool: Command is a name other
	// programs use too ("agent").
	PathMarker string
	Args       []string // the non-interactive flags
	Prompt     string   // how the prompt is passed: PromptStdin, PromptArg or PromptFile
	// PromptFlag, with PromptArg or PromptFile, is the flag the prompt (or
	// its file's path) follows; "" passes it as the last argument.
	PromptFlag string
	Output     string // how stdout is read: one of OutputFormats
	// Source is where the command and flags were read: a documentation
	// page, or the npm package and version whose --help was read.
	Source string
	// Experimental says the preset could not be confirmed from the tool's
	// own documentation or help: it follows secondary sources.
	Experimental bool
}

// presets are the built-in presets, sorted by name. Each one's flags are
// the tool's documented headless mode at the version or page its Source
// names; a tool that changes them is followed by a change here (and
// docs/AGENTS.md), and a user meanwhile overrides the field in config.yaml.
var presets = []Preset{
	{
		// aider: --message-file, --yes-always, --no-pretty and --no-stream
		// from https://aider.chat/docs/scripting.html and
		// https://aider.chat/docs/config/options.html. aider has no
		// structured output: its text is read by OutputAider, whose shape
		// (banner, answer, "Tokens: ... Cost: ..." report) is not
		// documented, hence experimental.
		Name: "aider", Tool: "Aider", Command: "aider",
		Args:   []string{"--yes-always", "--no-pretty", "--no-stream"},
		Prompt: PromptFile, PromptFlag: "--message-file", Output: OutputAider,
		Source:       "https://aider.chat/docs/scripting.html",
		Experimental: true,
	},
	{
		// claude-code: -p (print and exit), --output-format json (one
		// result object: result, session_id, total_cost_usd, usage,
		// modelUsage, is_error), the prompt on stdin, and
		// --permission-mode acceptEdits so edits in the working folder
		// need no approval; read from `claude --help` of
		// @anthropic-ai/claude-code@2.1.197.
		Name: "claude-code", Tool: "Claude Code", Command: "claude",
		Args:   []string{"-p", "--output-format", "json", "--permission-mode", "acceptEdits"},
		Prompt: PromptStdin, Output: OutputClaudeCode,
		Source: "npm @anthropic-ai/claude-code@2.1.197 (claude --help)",
	},
	{
		// codex: `codex exec` runs non-interactively, --json prints JSONL
		// events (thread.started, item.completed agent_message,
		// turn.completed usage, turn.failed, error), "-" reads the prompt
		// --sandbox workspace-write lets it edit the working
		// folder (without a prompt argument it reads the prompt from
		// stdin); read from `codex exec --help` of @openai/codex@0.169.0.
		Name: "codex", Tool: "Codex CLI", Command: "codex",
		Args:   []string{"exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check"},
		Prompt: PromptStdin, Output: OutputCodex,
		Source: "npm @openai/codex@0.169.0 (codex exec --help)",
	},
	{
		// cursor: print mode (-p) with --output-format json (one result
		// object on success, a message on stderr and a non-zero exit on
		// failure), the prompt as the positional argument; file edits in
		// the workspace run without --force. From
		// https://cursor.com/docs/cli/reference/output-format and
		// https://cursor.com/docs/cli/headless (the CLI is not on npm).
		// Its installer puts the program in ~/.local/bin as agent and,
		// from before the rename, as cursor-agent, which older installs
		// have alone.
		// agent is a link into ~/.local/share/cursor-agent, which tells
		// it from other programs of that name.
		Name: "cursor", Tool: "Cursor CLI", Command: "agent", OtherCommands: []string{"cursor-agent"}, PathMarker: "cursor",
		Args:   []string{"-p", "--output-format", "json"},
		Prompt: PromptArg, Output: OutputCursor,
		Source: "https://cursor.com/docs/cli/reference/output-format",
	},
	{
		// gemini: headless when stdin is not a terminal (the prompt is
		// read from it), --output-format json (session_id, response, stats.models.*.tokens,
		// error), --approval-mode auto_edit; read from `gemini --help` of
		// @google/gemini-cli@0.61.0 and https://geminicli.com/docs/cli/headless.
		Name: "gemini", Tool: "Gemini CLI", Command: "gemini",
		Args:   []string{"--output-format", "json", "--approval-mode", "auto_edit"},
		Prompt: PromptStdin, Output: OutputGemini,
		Source: "npm @google/gemini-cli@0.61.0 (gemini --help)",
	},
	{
		// hermes (Nous Research's Hermes Agent): -z runs one query and
		// prints only the final answer, per third-party cheat sheets; its
		// help could not be read (not on npm or PyPI under its name), so
		// the preset is experimental. No structured output.
		Name: "hermes", Tool: "Hermes Agent", Command: "hermes",
		Prompt: PromptArg, PromptFlag: "-z", Output: OutputText,
		Source:       "https://hermes-agent.nousresearch.com/docs (not confirmed)",
		Experimental: true,
	},
	{
		// opencode: `opencode run` with --format json prints JSONL events
		// (text, step_finish with tokens and cost, error), each with the
		// sessionID; it reads the message from stdin when stdin is not a
		// terminal; read from `opencode run --help` of opencode-ai@1.18.33.
		Name: "opencode", Tool: "opencode", Command: "opencode",
		Args:   []string{"run", "--format", "json"},
		Prompt: PromptStdin, Output: OutputOpenCode,
		Source: "npm opencode-ai@1.18.33 (opencode run --help)",
	},
}

// Presets returns the built-in agent presets, sorted by name. The caller
// owns the returned slice (and the Args of its elements).
func Presets() []Preset {
	out := slices.Clone(presets)
	for i := range out {
		out[i].Args = slices.Clone(out[i].Args)
	}
	return out
}

// PresetByName returns the built-in preset named name, if there is one,
// as a copy.
func PresetByName(name string) (Preset, bool) {
	for _, p := range presets {
		if p.Name == name {
			p.Args = slices.Clone(p.Args)
			return p, true
		}
	}
	return Preset{}, false
}

// presetNames names the presets for messages: "aider, claude-code, ...".
func presetNames() string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// withPreset returns a with what its preset gives filled in where a leaves
// it unset: Command, Args, Prompt, PromptFlag and Output; ExtraArgs stay
// apart (they follow Args). An unknown or empty preset leaves a as it is.
func withPreset(a Agent) Agent {
	p, ok := PresetByName(a.Preset)
	if !ok {
		return a
	}
	if a.Command == "" {
		a.Command = p.Command
	}
	if a.Args == nil {
		a.Args = p.Args
	}
	if a.Prompt == "" {
		a.Prompt = p.Prompt
		if a.PromptFlag == "" {
			a.PromptFlag = p.PromptFlag
		}
	}
	if a.Output == "" {
		a.Output = p.Output
	}
	return a
}
