// Package agent runs one role of a workflow: it is given a [Request] (the
// assembled prompt, the thread, the role, its output schema) and returns a
// [Result] whose Raw is the agent's raw output, which package extract then
// turns into structured output (SPEC §6). The step loop in package thread
// calls it; agents never read the store themselves.
//
// # Agents
//
// Every agent implements [Agent]:
//
//   - [Command] runs a program (the agents of config.yaml) without a shell:
//     the prompt on its stdin (or in an argument or a file), its stdout the
//     raw output (or, read as a coding agent's structured output, the
//     tool's final answer, with what it reported of its run as a
//     [Session]: id, model, tokens, cost), UWF_THREAD,
//     UWF_ROLE, UWF_HOME, UWF_STORE, UWF_DURABILITY, UWF_WORKFLOW and UWF_ATTEMPT in its
//     environment, in the start node's cwd, in a process group of its own
//     that is killed on timeout, on interruption and when the run ends;
//   - [LLM] asks an OpenAI-compatible chat completions endpoint, and with
//     [LLM.ExtractJSON] serves extract's LLM fallback;
//   - [Replay] returns a source thread's recorded raw outputs, retries
//     included, to re-run a thread deterministically;
//   - [Synth] makes up schema-valid outputs deterministically, to try a
//     workflow offline;
//   - [Human] asks a person on a terminal, or reads an answer file.
//
// # Built-in agents and the factory
//
// Package agent is the one place that knows the built-in agents (human,
// llm, replay:<thread>, synth): one table holds each one's name, checks and
// constructor. [Resolve] picks the agent that runs a role from the --agent
// flag and config.yaml (package config), [Check] checks that it could run
// without running it, and [New] builds it, from a [config.Agent] entry
// for a command. [Builtins] tells package config which names need no
// entry. The caller supplies what built-ins take from outside in
// [Options]: a terminal for human, a seed for synth, and for replay a
// [Threads] that reads the source thread (package thread implements it).
// Adding a built-in agent touches this package only.
//
// # Prompts
//
// [Assemble] lays out a step's prompt from [PromptParts]: goal, procedure,
// output text, the [FormatInstruction] derived from the role's schema
// (every field, its type, whether required, one block per status variant,
// an example, the $SUSPEND shape), the task (the edge prompt), a human's
// resume note, the thread so far and, on a retry, the correction.
//
// # Errors and exit codes
//
// A failed run is a *[RunError] wrapping [ErrFailed], holding what was
// captured and an exit code as a shell reports it: the command's own exit
// status, [ExitTimeout] (124), [ExitCannotRun] (126), [ExitNotFound] (127),
// [ExitSignal]+N when killed by signal N, [ExitInterrupted] (130, and the
// error wraps [context.Canceled]). [ExitCode] and [DescribeExit] read them
// back. The detail node of a step records the exit code.
//
// # Concurrency
//
// Every agent is safe for concurrent use. A [Human] serves one run at a
// time; the others wait their turn.
package agent
