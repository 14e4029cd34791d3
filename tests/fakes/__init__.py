"""Testing aids, not part of the meetmem package: scripted stand-ins for the hosted chat APIs that cannot run
here (an OpenAI-compatible chat server and Anthropic's Messages API), real HTTP servers on loopback that the
real clients of `meetmem.summarizers.llm` talk to. Tests import them as `fakes.chat_server` and
`fakes.anthropic_server` (pytest puts tests/ on sys.path: `pythonpath` in pyproject.toml)."""
