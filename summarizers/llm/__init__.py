"""The language-model clients, one home for the summarizers and the cloud's answers alike: the chat seam and
its OpenAI-compatible client (`chat`), the tool-calling variant (`chat_tools`), Anthropic's Messages API
(`anthropic_chat`), and the local model: a llama.cpp server process (`llama_server`) and the GGUF it loads
(`local_model`). Their errors are `ChatError`, a `SummarizerError` (`meetmem.summarizers.errors`)."""
