// Package config reads uwf's configuration (SPEC §6): <home>/config.yaml
// and the secrets in <home>/.env. docs/WORKFLOWS.md is the user's guide.
//
// # Vocabulary
//
//   - An [Agent] is an external agent command of config.yaml's agents:;
//     defaultAgent and agentOverrides (workflow -> role -> agent) say which
//     agent runs a role ([Config.AgentName]). Built-in agents (synth, llm,
//     human, replay:<thread>) need no entry: package agent owns them, and
//     the name -> agent factory, and tells [Load] their names through
//     [Builtins].
//   - A [Preset] is a ready-made agent entry for a coding agent's
//     documented headless mode (claude-code, codex, cursor, gemini,
//     opencode, and the experimental aider and hermes): agents.<name>.preset
//     fills in the command, args, prompt passing ([PromptModes]) and output
//     reading ([OutputFormats]) that the entry leaves unset, and extraArgs
//     adds flags ([Config.Agent]). [Presets] lists them with their sources.
//   - A [Provider] is an OpenAI-compatible endpoint, a [Model] one of its
//     models; defaultModel and modelOverrides pick one per role
//     ([Config.ModelFor]) for the llm agent and for extraction.
//   - A secret is a value uwf never stores or prints: API keys are read
//     from the environment or .env ([Config.Secret]), never from
//     config.yaml; [Config.Secrets] lists the known ones (API keys,
//     variables named *KEY*, *TOKEN*, *SECRET*, *PASSWORD*, those listed
//     under secrets:) that uwf masks in agent output and logs; [Masked]
//     hides secret settings when they are printed.
//
// # Validation
//
// [Load] and [Parse] check config.yaml as YAML (one document, string keys,
// no duplicates, merge keys resolved, aliases bounded, as workflow files:
// [cas.CheckYAML]) and as a configuration (known keys, durations, URLs, variable names, names of
// agents, providers and models that exist). The error is a
// *[ValidationError] with one "file:line:col: message" per problem.
// [Config.Get], [Config.List], [Masked] and [Set] back "uwf config
// get|list|set"; [Set] validates the new file before it replaces the old
// one atomically.
//
// # Concurrency
//
// A [Config] is safe for concurrent reads but not for modification
// meanwhile. The functions are safe for concurrent use; concurrent [Set]s
// of one home race (the last rename wins), as editors do.
package config
