#!/bin/sh
# A fake coding agent for the preset tests (presets_test.go). It is linked
# under each tool's command name (claude, codex, agent, gemini, opencode,
# hermes, aider) and prints what that tool's headless mode documents (see
# docs/AGENTS.md): the answer in the tool's structured output on success,
# its error object or message on failure, a rate-limit error, or nothing
# until it is killed (timeout). FAKE_MODE picks which; FAKE_LOG is a folder
# where it records its argv (NUL-separated), its stdin and, with
# --message-file, the prompt file. It echoes ANTHROPIC_API_KEY into its
# output and stderr, to check that uwf masks it; FAKE_MODE=escaped is the
# error with the key JSON-escaped (\u0073k\u002D\u0061nt...).
tool=$(basename "$0")
printf '%s\0' "$tool" "$@" > "$FAKE_LOG/argv"
cat > "$FAKE_LOG/stdin"
prev=
for a in "$@"; do
	if [ "$prev" = "--message-file" ]; then cp "$a" "$FAKE_LOG/promptfile"; fi
	prev=$a
done
if [ "$FAKE_MODE" = escaped ]; then
	# The tool's error, the key in it JSON-escaped as some tools write it.
	ANTHROPIC_API_KEY=$(printf '%s' "$ANTHROPIC_API_KEY" | sed 's/^s/\\u0073/; s/-/\\u002D/g; s/a/\\u0061/')
	FAKE_MODE=error
fi
echo "using key $ANTHROPIC_API_KEY" >&2

answer="---\nstatus: done\nsummary: from $tool\n---\nDone with key $ANTHROPIC_API_KEY."
case "$FAKE_MODE" in
timeout)
	sleep 30
	exit 0
	;;
ok)
	case "$tool" in
	claude)
		printf '{"type":"result","subtype":"success","is_error":false,"duration_ms":2310,"num_turns":2,"result":"%s","session_id":"claude-session-1","total_cost_usd":0.0123,"usage":{"input_tokens":12,"cache_creation_input_tokens":1000,"cache_read_input_tokens":3000,"output_tokens":56},"modelUsage":{"claude-sonnet-4-5":{"inputTokens":12,"outputTokens":56,"costUSD":0.0123}}}\n' "$answer"
		;;
	codex)
		printf '{"type":"thread.started","thread_id":"codex-thread-1"}\n{"type":"turn.started"}\n'
		printf '{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"%s"}}\n' "$answer"
		printf '{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}\n'
		;;
	agent)
		printf '{"type":"result","subtype":"success","is_error":false,"duration_ms":1234,"duration_api_ms":1234,"result":"%s","session_id":"cursor-session-1","request_id":"req-1"}\n' "$answer"
		;;
	gemini)
		printf '{\n  "session_id": "gemini-session-1",\n  "response": "%s",\n  "stats": {"models": {"gemini-2.5-pro": {"tokens": {"prompt": 24939, "candidates": 20, "total": 25113, "cached": 21263, "thoughts": 154}}}}\n}\n' "$answer"
		;;
	opencode)
		printf '{"type":"step_start","timestamp":1,"sessionID":"ses_opencode1","part":{"type":"step-start"}}\n'
		printf '{"type":"text","timestamp":2,"sessionID":"ses_opencode1","part":{"type":"text","text":"%s"}}\n' "$answer"
		printf '{"type":"step_finish","timestamp":3,"sessionID":"ses_opencode1","part":{"type":"step-finish","tokens":{"input":300,"output":25,"reasoning":10,"cache":{"read":9000,"write":100}},"cost":0.002}}\n'
		;;
	aider)
		printf 'Aider v0.86.1\nMain model: anthropic/claude-sonnet-4-5 with diff edit format\n\n'
		printf '%b\n\n' "$answer"
		printf 'Tokens: 2.3k sent, 150 received. Cost: $0.01 message, $0.01 session.\n'
		;;
	*)
		printf '%b\n' "$answer"
		;;
	esac
	;;
error | ratelimit)
	msg="Invalid API key $ANTHROPIC_API_KEY"
	code=1
	if [ "$FAKE_MODE" = ratelimit ]; then msg="429 Too Many Requests: rate limit exceeded"; fi
	case "$tool" in
	claude)
		status=null
		if [ "$FAKE_MODE" = ratelimit ]; then status=429; fi
		printf '{"type":"result","subtype":"success","is_error":true,"api_error_status":%s,"result":"API Error: %s","session_id":"claude-session-2","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"modelUsage":{}}\n' "$status" "$msg"
		;;
	codex)
		printf '{"type":"thread.started","thread_id":"codex-thread-2"}\n{"type":"turn.started"}\n'
		printf '{"type":"error","message":"%s"}\n{"type":"turn.failed","error":{"message":"%s"}}\n' "$msg" "$msg"
		;;
	gemini)
		code=1
		if [ "$FAKE_MODE" = error ]; then code=53; fi
		printf '{\n  "session_id": "gemini-session-2",\n  "error": {"type": "FatalError", "message": "%s", "code": %s}\n}\n' "$msg" "$code" >&2
		;;
	opencode)
		printf '{"type":"error","timestamp":1,"sessionID":"ses_opencode2","error":{"name":"APIError","data":{"message":"%s"}}}\n' "$msg"
		;;
	*)
		echo "Error: $msg" >&2
		;;
	esac
	exit $code
	;;
esac
